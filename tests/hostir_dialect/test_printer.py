"""hostir's Printer writes exactly what xDSL's writes, in every format hostir-opt prints."""

from __future__ import annotations

import io
from pathlib import Path

import pytest
from xdsl import printer as xdsl_printer

from hostir.passes import lower
from hostir_dialect.context import parse_module
from hostir_dialect.printer import Printer

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


def printed(printer_class: type[xdsl_printer.Printer], module, **options) -> str:
    stream = io.StringIO()
    printer_class(stream=stream, **options).print_op(module)
    return stream.getvalue()


@pytest.mark.parametrize("options", [{}, {"print_generic_format": True}, {"print_debuginfo": True},
                                     {"print_properties_as_attributes": True}])
@pytest.mark.parametrize("example", ["fusions/ag_matmul.mlir", "host_programs/host_allgather_matmul.mlir"])
def test_the_text_is_xdsls(example, options):
    path = EXAMPLES / example
    module = parse_module(path.read_text(), str(path))
    lower(module)
    assert printed(Printer, module, **options) == printed(xdsl_printer.Printer, module, **options)


def test_without_a_stream_it_prints_to_the_standard_output(capsys):
    module = parse_module((EXAMPLES / "fusions/single_set_op.mlir").read_text())
    Printer().print_op(module)
    assert capsys.readouterr().out == printed(xdsl_printer.Printer, module)
