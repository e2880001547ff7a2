"""The xDSL context that knows every dialect a hostir module may contain."""

from __future__ import annotations

from xdsl.context import Context
from xdsl.dialects.arith import Arith
from xdsl.dialects.builtin import Builtin
from xdsl.dialects.scf import Scf

from .diagnostics import LocatingParser, verify_located
from .fusion import Fusion
from .hir import HIR

DIALECTS = (Builtin, Arith, Scf, Fusion, HIR)


def make_context() -> Context:
    ctx = Context()
    for dialect in DIALECTS:
        ctx.load_dialect(dialect)
    return ctx


def parse_module(text: str | bytes, name: str = "<string>"):
    """Parse and verify a module; errors are HostIRError/ParseError with locations."""
    module = LocatingParser(make_context(), text, name).parse_module()
    verify_located(module)
    return module

