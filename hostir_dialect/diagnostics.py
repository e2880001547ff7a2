"""Diagnostics that point at the source: `file:line:col: error: 'op' op reason`.

Ops parsed by `LocatingParser` carry a FileLineColLoc; ops created by passes inherit the
location of the op they came from (`located_like`) or are reported at their nearest
located ancestor.
"""

from __future__ import annotations

import bisect
import dataclasses
import re

from xdsl.dialects.builtin import FileLineColLoc, IntAttr, StringAttr
from xdsl.ir import Operation
from xdsl.parser import Parser
from xdsl.utils.exceptions import DiagnosticException, ParseError, VerifyException

from .parsing import peek_token


class HostIRError(DiagnosticException):
    """An error about the IR (verifier, pass precondition, lowering) with its location."""


def location_of(op: Operation | None) -> str | None:
    while op is not None:
        if isinstance(op.location, FileLineColLoc):
            loc = op.location
            return f"{loc.filename.data}:{loc.line.data}:{loc.column.data}"
        op = op.parent_op()
    return None


def describe(op: Operation, reason: str) -> str:
    where = location_of(op)
    prefix = f"{where}: " if where else ""
    return f"{prefix}error: '{op.name}' op {reason}"


def op_error(op: Operation, reason: str) -> HostIRError:
    """The exception a pass raises when `op` breaks one of its preconditions."""
    return HostIRError(describe(op, reason))


def parse_error(error: ParseError, line_offset: int = 0) -> HostIRError:
    """MLIR's layout for a parse error: the located message, then the source line."""
    span = dataclasses.replace(error.span, line_offset=line_offset)
    where = span.get_location()
    context = span.print_with_context().split("\n", 1)[1].rstrip()
    return HostIRError(f"{where.file}:{where.line}:{where.col}: error: {error.msg}\n{context}")


def located_like(new: Operation, original: Operation) -> Operation:
    new.location = original.location
    return new


def verify_located(root: Operation) -> None:
    """Verify every op, reporting the first failure at its source location."""
    for op in root.walk():
        try:
            op.verify(verify_nested_ops=False)
        except VerifyException as error:
            reason = str(error.__cause__ or error)
            raise HostIRError(describe(op, reason.removeprefix("Operation does not verify: "))) from None


class LocatingParser(Parser):
    """A parser that records where each op was written (MLIR's default behaviour).

    `line_offset` is the line the text starts at in its file (for split input files).
    Lines are found by bisecting the offsets of the line starts, numbered once: xDSL's
    `Span.get_location` counts the newlines from the start of the text at every call,
    which made locating every op quadratic in the size of the file.
    """

    def __init__(self, ctx, text: str, name: str = "<unknown>", line_offset: int = 0):
        super().__init__(ctx, text, name)
        self.line_offset = line_offset
        self.line_starts = [0, *(match.end() for match in re.finditer("\n", text))]
        self.file = StringAttr(name)

    def parse_operation(self) -> Operation:
        start_span = peek_token(self).span  # where the op's text starts
        try:
            op = super().parse_operation()
        except VerifyException as error:
            # Custom formats check type constraints while parsing; locate that error too.
            self.raise_error(str(error), start_span)
        if not isinstance(op.location, FileLineColLoc):  # an explicit `loc(...)` stays
            line = bisect.bisect_right(self.line_starts, start_span.start)
            column = start_span.start - self.line_starts[line - 1] + 1
            op.location = FileLineColLoc(self.file, IntAttr(line + self.line_offset), IntAttr(column))
        return op

    def parse_module(self, allow_implicit_module: bool = True):
        module = super().parse_module(allow_implicit_module)
        if not isinstance(module.location, FileLineColLoc):
            # An implicit module (its errors: symbol redefinitions) is where its text starts.
            module.location = FileLineColLoc(
                StringAttr(self.lexer.input.name), IntAttr(1 + self.line_offset), IntAttr(1)
            )
        return module
