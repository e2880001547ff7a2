"""The xDSL context that knows every dialect a hostir module may contain."""

from __future__ import annotations

import io

from xdsl.context import Context
from xdsl.dialects.arith import Arith
from xdsl.dialects.builtin import Builtin
from xdsl.dialects.scf import Scf
from xdsl.printer import Printer

from .diagnostics import LocatingParser, verify_located
from .fusion import Fusion
from .hir import HIR

DIALECTS = (Builtin, Arith, Scf, Fusion, HIR)


def make_context() -> Context:
    ctx = Context()
    for dialect in DIALECTS:
        ctx.load_dialect(dialect)
    return ctx


def parse_module(text: str, name: str = "<string>"):
    """Parse and verify a module; errors are HostIRError/ParseError with locations."""
    module = LocatingParser(make_context(), text, name).parse_module()
    verify_located(module)
    return module


def located_text(module) -> str:
    """The module's text with every op's location (`loc(...)`): `parse_module` of it gives
    the ops back with the locations of their source, e.g. to run a program elsewhere and
    still name ops by where they were written."""
    out = io.StringIO()
    Printer(stream=out, print_debuginfo=True).print_op(module)
    return out.getvalue()
