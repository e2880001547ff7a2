"""Diagnostics that point at the source: `file:line:col: error: 'op' op reason`.

Ops parsed by `LocatingParser` carry a FileLineColLoc; ops created by passes inherit the
location of the op they came from (`located_like`) or are reported at their nearest
located ancestor. `located_text` prints a module with those locations (`loc("f":l:c)`)
and `LocatingParser` keeps a written location, so a program handed to other processes
as text still reports errors at the user's `file:line:col`.

`verify_located` is xDSL's verifier plus what MLIR's verifier checks and xDSL's does not:
SSA dominance, symbol redefinitions at the second definition, positive constant
`scf.for` steps, and hostir's buffer lifetimes (no use after `hir.deallocate`).
"""

from __future__ import annotations

import bisect
import dataclasses
import functools
import re
import sys
from typing import BinaryIO, TypeVar

from xdsl.dialects import arith, scf
from xdsl.dialects.builtin import FileLineColLoc, IndexType, IntAttr, IntegerAttr, ModuleOp, StringAttr
from xdsl.ir import Block, Operation, SSAValue
from xdsl.parser import GenericParser, Parser, ParserState
from xdsl.traits import IsolatedFromAbove, OpTrait, SymbolOpInterface, SymbolTable
from xdsl.utils.exceptions import DiagnosticException, ParseError, VerifyException
from xdsl.utils.lexer import Input, Span, Token
from xdsl.utils.mlir_lexer import MLIRTokenKind

from .hir import DeallocateOp
from .parsing import LinearMLIRLexer, next_token, previous_token, token_at
from .printer import op_text
from .tensor_type import parse_known_tensor_type

RECURSION_LIMIT = 10_000
"""xDSL's parser, printer and walkers recurse a few frames per nested region; Python's
default limit (1000) stops at about 150 nested loops, which MLIR handles easily."""

INT64_MAX = 2**63 - 1


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


MAX_SOURCE_BYTES = 1 << 26
"""The most bytes of IR the tools read: 64 MiB (benchmarks/compile_time.py's fusion of
10,000 ops is 1.7 MB, lowered 5.4 MB). A device such as /dev/zero never ends, and would
be read until memory runs out."""


def read_source(stream: BinaryIO, name: str) -> bytes:
    """The whole of `stream`, or a located error if it holds more than MAX_SOURCE_BYTES."""
    text = stream.read(MAX_SOURCE_BYTES + 1)
    if len(text) > MAX_SOURCE_BYTES:
        raise HostIRError(f"{name}:1:1: error: input is larger than {MAX_SOURCE_BYTES >> 20} MiB")
    return text


def parse_error(error: ParseError, line_offset: int = 0) -> HostIRError:
    """MLIR's layout for a parse error: the located message, then the source line."""
    span = dataclasses.replace(error.span, line_offset=line_offset)
    where = span.get_location()
    context = span.print_with_context().split("\n", 1)[1].rstrip()
    return HostIRError(f"{where.file}:{where.line}:{where.col}: error: {error.msg}\n{context}")


OpT = TypeVar("OpT", bound=Operation)


def located_like(new: OpT, original: Operation) -> OpT:
    new.location = original.location
    return new


def located_text(module: Operation) -> str:
    """`module` printed with every op's location (its own, else its nearest located
    ancestor's), for a parser in another process to read back."""
    located = module.clone()
    for op in located.walk():
        parent = op.parent_op()
        if not isinstance(op.location, FileLineColLoc) and parent is not None:
            op.location = parent.location
    return op_text(located, print_debuginfo=True)


def allow_deep_nesting() -> None:
    """Raise Python's recursion limit to RECURSION_LIMIT (never lower it)."""
    if sys.getrecursionlimit() < RECURSION_LIMIT:
        sys.setrecursionlimit(RECURSION_LIMIT)


# --------------------------------------------------------------------------- #
# Verification
# --------------------------------------------------------------------------- #


def verify_located(root: Operation) -> None:
    """Verify every op, reporting the first failure at its source location."""
    _verify_op(root, _Scope())


@dataclasses.dataclass
class _Scope:
    """The values an op may use: defined before it in its block or an enclosing one."""

    visible: set[SSAValue] = dataclasses.field(default_factory=set)
    freed: set[SSAValue] = dataclasses.field(default_factory=set)
    """Buffers (and values written into them) a hir.deallocate already gave back."""


def _verify_op(op: Operation, scope: _Scope) -> None:
    problem = _use_problem(op, scope) or _symbol_problem(op) or _step_problem(op)
    if problem:
        raise op_error(*problem)
    try:
        op.verify(verify_nested_ops=False)
    except VerifyException as error:
        reason = str(error.__cause__ or error)
        raise HostIRError(describe(op, reason.removeprefix("Operation does not verify: "))) from None
    inner = _Scope() if _class_has_trait(type(op), IsolatedFromAbove) else scope
    for region in op.regions:
        for block in region.blocks:
            _verify_block(block, inner)
    if isinstance(op, DeallocateOp):
        scope.freed.update(op.freed_values())


def _verify_block(block: Block, scope: _Scope) -> None:
    defined: list[SSAValue] = list(block.args)
    scope.visible.update(block.args)
    for op in block.ops:
        _verify_op(op, scope)
        scope.visible.update(op.results)
        defined.extend(op.results)
    scope.visible.difference_update(defined)


@functools.cache
def _class_has_trait(op_class: type[Operation], trait: type[OpTrait]) -> bool:
    """`has_trait` of an op class, which scans its traits: they are fixed when the class
    is defined, and the verifier asks it of every op, twice."""
    return op_class.has_trait(trait)


def _use_problem(op: Operation, scope: _Scope) -> tuple[Operation, str] | None:
    for index, operand in enumerate(op.operands):
        if operand not in scope.visible:
            return op, f"operand #{index} does not dominate this use"
        if operand in scope.freed:
            name = f"%{operand.name_hint}" if operand.name_hint else f"operand #{index}"
            return op, f"uses {name} after its hir.deallocate"
    return None


def _symbol_problem(op: Operation) -> tuple[Operation, str] | None:
    """MLIR reports a symbol defined twice at the second definition."""
    if not _class_has_trait(type(op), SymbolTable):
        return None
    seen: set[str] = set()
    for region in op.regions:
        for child in region.ops:
            interface = child.get_trait(SymbolOpInterface)
            symbol = interface.get_sym_attr_name(child) if interface else None
            if symbol is None:
                continue
            if symbol.data in seen:
                return child, f"redefinition of symbol named '{symbol.data}'"
            seen.add(symbol.data)
    return None


def _step_problem(op: Operation) -> tuple[Operation, str] | None:
    """MLIR's scf.for verifier refuses a constant step that is not positive; xDSL's does not."""
    if not isinstance(op, scf.ForOp) or not isinstance(op.step.owner, arith.ConstantOp):
        return None
    step = op.step.owner.value
    if isinstance(step, IntegerAttr) and step.value.data <= 0:
        return op, "constant step operand must be positive"
    return None


# --------------------------------------------------------------------------- #
# Parsing
# --------------------------------------------------------------------------- #


class LocatingParser(Parser):
    """A parser that records where each op was written (MLIR's default behaviour; a
    written `loc("f":l:c)` is kept) and reports errors where MLIR does: an undefined value
    at its use, an unknown op or alias at its name, a missing token right after the
    previous one. Input without ops is an empty module; bytes that are not UTF-8, and
    nesting deeper than RECURSION_LIMIT allows, are located errors.

    `line_offset` is the line the text starts at in its file (for split input files).
    Lines are found by bisecting the offsets of the line starts, numbered once: xDSL's
    `Span.get_location` counts the newlines from the start of the text at every call,
    which made locating every op quadratic in the size of the file.
    """

    def __init__(self, ctx, text: str | bytes, name: str = "<unknown>", line_offset: int = 0):
        if isinstance(text, bytes):
            try:
                text = text.decode()
            except UnicodeDecodeError:
                source = Input(text.decode(errors="replace"), name)  # type: ignore[union-attr]  # still the bytes: decode raised
                raise ParseError(Span(0, 0, source), "input is not valid UTF-8") from None
        super().__init__(ctx, "", name)
        # xDSL's Parser lexes with MLIRLexer, whose first token may already be a string left
        # open; GenericParser's constructor starts this parser over on the text, lexed by
        # hostir's LinearMLIRLexer.
        GenericParser.__init__(self, ParserState(LinearMLIRLexer(Input(text, name))))
        self.line_offset = line_offset
        self.first_uses: dict[str, Span] = {}
        """Where each value name was first used before its definition."""
        self.line_starts = [0, *(match.end() for match in re.finditer("\n", text))]
        self.file = StringAttr(name)
        self.op_start = 0
        """Where the op parsed last started (where `previous_token` starts lexing)."""

    def parse_optional_type(self):
        known = parse_known_tensor_type(self)
        return known if known is not None else super().parse_optional_type()

    def parse_operation(self) -> Operation:
        start = self.op_start = self.pos  # where the op's text starts
        try:
            op = super().parse_operation()
        except VerifyException as error:
            # Custom formats check type constraints while parsing; locate that error too.
            self.raise_error(str(error), token_at(self, start).span)
        if not isinstance(op.location, FileLineColLoc):  # a written `loc(...)` is kept
            line = bisect.bisect_right(self.line_starts, start)
            column = start - self.line_starts[line - 1] + 1
            op.location = FileLineColLoc(self.file, IntAttr(line + self.line_offset), IntAttr(column))
        return op

    def resolve_operand(self, operand, type):
        if operand.operand_name not in self.ssa_values:
            self.first_uses.setdefault(operand.operand_name, operand.span)
        return super().resolve_operand(operand, type)

    def parse_optional_builtin_int_or_float_attr(self):
        start = self.pos
        attribute = super().parse_optional_builtin_int_or_float_attr()
        # xDSL checks the range of iN constants but not of index ones; torch's are int64.
        if isinstance(attribute, IntegerAttr) and isinstance(attribute.type, IndexType):
            if not -INT64_MAX - 1 <= attribute.value.data <= INT64_MAX:
                self.raise_error(f"integer constant {attribute.value.data} does not fit in 64 bits", token_at(self, start).span)
        return attribute

    def parse_module(self, allow_implicit_module: bool = True):
        allow_deep_nesting()
        try:
            module = super().parse_module(allow_implicit_module)
        except RecursionError:
            self.raise_error(f"nesting too deep (more than Python's recursion limit of {RECURSION_LIMIT} frames)")
        except ParseError as error:
            if allow_implicit_module and self._at_end_without_ops(error):
                module = ModuleOp([])
            else:
                raise self._relocated(error) from None
        if not isinstance(module.location, FileLineColLoc):
            # An implicit module (its errors: symbol redefinitions) is where its text starts.
            module.location = FileLineColLoc(
                StringAttr(self.lexer.input.name), IntAttr(1 + self.line_offset), IntAttr(1)
            )
        return module

    def _at_end_without_ops(self, error: ParseError) -> bool:
        """An input of comments and aliases only: MLIR's empty module, not an error."""
        return error.msg == "Could not parse entire input!" and next_token(self).kind == MLIRTokenKind.EOF

    def _relocated(self, error: ParseError) -> ParseError:
        """`error` at the place and in the words MLIR uses."""
        token, previous = next_token(self), previous_token(self, self.op_start)
        message = error.msg
        if message.startswith("values used but not defined"):
            name = next(iter(self.forward_ssa_references))
            return ParseError(self.first_uses[name], f"use of undeclared SSA value name %{name}")
        if message == " in block definition":
            if token.kind == MLIRTokenKind.EOF:
                return ParseError(error.span, "expected '}' to close the region, found the end of the input")
            return ParseError(error.span, f"expected an operation or '}}', found '{token.text}'")
        if message == "Could not parse entire input!":
            return ParseError(error.span, f"expected an operation, found '{token.text}'")
        if previous is None:
            return error
        if message.endswith(" is not registered") or message.startswith(("undefined symbol alias", "re-declaration")):
            return ParseError(previous.span, message)  # the name just read
        if "expected" in message.lower() and error.span.start == token.span.start and _on_a_later_line(token, previous):
            end = previous.span.end
            return ParseError(Span(end, end, self.lexer.input), message)
        return error


def _on_a_later_line(token: Token, previous: Token) -> bool:
    """Is the expected token missing at the end of the previous token's line (the token
    found is on a later line, and not the end of the input)?"""
    between = token.span.input.content[previous.span.end : token.span.start]
    return token.kind != MLIRTokenKind.EOF and "\n" in between
