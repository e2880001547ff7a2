"""Remarks are located lines on the `hostir.remarks` logger, silent unless asked for;
`printed_on` prints them while inside and leaves the logger as it was."""

from __future__ import annotations

import io
import logging

from hostir_dialect import remarks
from hostir_dialect.context import parse_module

T = "!fusion.tensor<f32[4]>"


def an_op():
    module = parse_module(f"fusion.func @f(%a: {T}) -> ({T}) {{\n  fusion.return %a : {T}\n}}\n", "in.mlir")
    return module.ops.first


def test_remarks_are_printed_located_while_asked_for(capsys) -> None:
    stream = io.StringIO()
    handlers, level = list(remarks.LOGGER.handlers), remarks.LOGGER.level
    with remarks.printed_on(stream):
        remarks.remark(an_op(), "some-pass", "chose this")
    assert stream.getvalue() == "in.mlir:1:1: remark: some-pass: chose this\n"
    assert remarks.LOGGER.handlers == handlers and remarks.LOGGER.level == level
    remarks.remark(an_op(), "some-pass", "unheard")
    assert "unheard" not in stream.getvalue() + capsys.readouterr().err


def test_a_caller_can_collect_them_through_logging(caplog) -> None:
    with caplog.at_level(logging.INFO, logger="hostir.remarks"):
        remarks.remark(an_op(), "some-pass", "chose that")
    assert caplog.messages == ["in.mlir:1:1: remark: some-pass: chose that"]
