"""op_definition: an op's definition is checked in full once per signature; its traits and
its own checks run on every op, and a signature that failed is checked again."""

from __future__ import annotations

import pytest
from xdsl.dialects import arith
from xdsl.dialects.builtin import IndexType, IntegerAttr, i32
from xdsl.ir import Block
from xdsl.utils.exceptions import VerifyException

from hostir_dialect import hir
from hostir_dialect.context import parse_module
from hostir_dialect.definition import signature
from hostir_dialect.diagnostics import HostIRError
from hostir_dialect.tensor_type import TensorType

T = "!fusion.tensor<f32[4, 8]>"
ROW = "!fusion.tensor<f32[8]>"


def program(body: str, name: str = "p") -> str:
    return (f"hir.program @{name}(%t: {T}) -> () {{\n  %c0 = arith.constant 0 : index\n{body}\n"
            "  hir.return\n}\n")


def test_ops_of_one_signature_share_the_definition_check_not_the_checks_of_their_place():
    select = f"  %v = hir.alias_select %t[%c0] axis 0 : {T} -> {ROW}"
    parse_module(program(select))  # the signature passes in a program
    into = f"  %d = hir.allocate : {T}\n  %s = fusion.neg %t into %d : {T} -> {T}"
    parse_module(program(into))
    in_kernel = f"fusion.func @k(%t: {T}, %d: {T}) -> ({T}) {{\n  %s = fusion.neg %t into %d : {T} -> {T}\n  fusion.return %s : {T}\n}}"
    with pytest.raises(HostIRError, match="destination operands"):  # the op's own check
        parse_module(in_kernel)
    in_func = f"fusion.func @k(%t: {T}) -> () {{\n  %c0 = arith.constant 0 : index\n{select}\n  fusion.return\n}}"
    with pytest.raises(HostIRError, match="not allowed in a fusion.func"):  # a trait
        parse_module(in_func)


def test_a_signature_that_failed_is_checked_again():
    index = arith.ConstantOp(IntegerAttr(0, IndexType()))
    tensor = Block(arg_types=[parse_type(T)]).args[0]
    wrong_index = arith.ConstantOp(IntegerAttr(0, i32))
    for _ in range(2):
        bad = hir.AliasSelectOp(tensor, wrong_index.result, 0, parse_type(ROW))
        with pytest.raises(VerifyException, match="index"):
            bad.verify()
    good = hir.AliasSelectOp(tensor, index.result, 0, parse_type(ROW))
    good.verify()
    assert signature(good) != signature(bad)


def test_ops_with_regions_have_no_signature():
    module = parse_module(program(""))
    (function,) = module.ops
    assert signature(function) is None
    assert signature(function.body.block.first_op) is not None


def parse_type(text: str) -> TensorType:
    module = parse_module(program(f"  %b = hir.allocate : {text}"))
    return module.ops.first.body.block.ops.first.next_op.result.type
