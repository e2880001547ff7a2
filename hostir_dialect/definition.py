"""Defining hostir's ops: `irdl_op_definition`, with the definition checked once per signature.

xDSL's verifier of an op's definition (`OpDef.verify`) matches the op's operands, results,
regions and successors to their definitions, checks each against its constraint, then the
properties, the attributes and the traits: about 70 µs a `hir.alias_select`, two thirds of
verifying it. Every check but the traits' reads only the op's class, its operand and
result types, its properties and its attributes, the number of its successors and the
number of blocks and entry arguments' types of its regions: its *signature*. A lowered
program repeats a few signatures by the thousand (stream-parallel-type emits a view, a
buffer and its release for every chunked tensor of every loop, and two loops), and
verification runs on every one of them twice (the input, then the pipeline's result). So
an op whose signature has passed the whole check before has only its traits checked
(they read where the op is, and what its regions hold). This is hostir's own `OpDef`,
`SignatureCheckedOpDef`, which `op_definition` gives hostir's op classes in place of
xDSL's; the ops of xDSL's dialects (`scf.for`, `arith.constant`, ...) keep xDSL's, checked
in full every time: hostir changes no class of xDSL's. The same `verify` could serve every
op as xDSL's own `OpDef.verify` (docs/architecture.md).

The parser builds an op through `IRDLOperation.build`, which matches every operand and
result to its definition before `Operation.__init__` runs (a fifth of parsing a fusion);
an op without regions, successors or segment sizes is built from its operands and result
types in order instead, as `init_flat` builds it, and checked by the verifier.

xDSL compiles an op's assembly format when its class is defined: two thirds of importing
hostir's dialects, which every `hostir-opt` command pays, though a program uses a few of
its 64 ops. An op's format is compiled when the first op of its class is parsed or
printed instead (`check_formats` compiles them all, for the tests), with faster
equivalents of two of xDSL's directives (`_FASTER`).
"""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Callable, Hashable, Iterable, Sequence
from typing import TypeVar

from xdsl.dialects.builtin import BytesAttr, DenseArrayBase, IntegerType
from xdsl.ir import Attribute, Operation, SSAValue
from xdsl.irdl import IRDLOperation, OpDef
from xdsl.irdl.declarative_assembly_format import (
    AttrDictDirective,
    DenseArrayAttributeVariable,
    FormatDirective,
    FormatProgram,
    PrintingState,
)
from xdsl.irdl.operations import get_accessors_from_op_def
from xdsl.parser import Parser
from xdsl.printer import Printer

from .building import init_flat
from .parsing import next_token

_Op = TypeVar("_Op", bound=IRDLOperation)


def op_definition(cls: type[_Op]) -> type[_Op]:
    """xDSL's `irdl_op_definition` with hostir's `OpDef` (`SignatureCheckedOpDef`), the
    assembly format compiled on first use, and a flat builder where the op has no
    regions, successors or options."""
    assert issubclass(cls, IRDLOperation), f"{cls.__name__} is not an IRDLOperation"
    assembly_format = cls.assembly_format
    cls.assembly_format = None  # compiled on first use (`_use_format`), not here
    op_def = SignatureCheckedOpDef.of(OpDef.from_pyrdl(cls))
    for name, value in get_accessors_from_op_def(op_def, getattr(cls, "verify_", None)).items():
        setattr(cls, name, value)
    if not op_def.options and not op_def.regions and not op_def.successors:
        setattr(cls, "build", classmethod(_flat_build(cls.build)))  # noqa: B010 -- set as the accessors above are
    if assembly_format is not None:
        cls.assembly_format = op_def.assembly_format = assembly_format
        _use_format(cls, op_def)
    return cls


def _use_format(cls: type[_Op], op_def: OpDef) -> None:
    """Parse and print `cls` with its assembly format, compiled when first needed."""
    program = functools.cache(lambda: _compiled_format(op_def))

    def parse(cls: type[_Op], parser: Parser) -> _Op:
        return program().parse(parser, cls)

    def print(op: _Op, printer: Printer) -> None:
        program().print(printer, op)

    for name, method in (("parse", classmethod(parse)), ("print", print), ("format_program", staticmethod(program))):
        setattr(cls, name, method)


def _compiled_format(op_def: OpDef) -> FormatProgram:
    assert op_def.assembly_format is not None  # `_use_format` is given only ops that have one
    program = FormatProgram.from_str(op_def.assembly_format, op_def)
    return dataclasses.replace(program, stmts=tuple(_faster(directive) for directive in program.stmts))


def _faster(directive: FormatDirective) -> FormatDirective:
    """`directive` as its faster equivalent below, if it has one."""
    faster = _FASTER.get(type(directive))
    if faster is None:
        return directive
    return faster(**{field.name: getattr(directive, field.name) for field in dataclasses.fields(directive)})


@dataclasses.dataclass(frozen=True)
class _IntegerArrayVariable(DenseArrayAttributeVariable):
    """xDSL's dense-array variable (a collective's team, a reduction's dims), printed
    without its `isa(attr, DenseArrayBase[IntegerType])`, which builds a constraint from
    the generic type each time: a fifth of printing a collective; parsed with each
    integer checked against the element type (xDSL packs it unchecked: `struct.error`)."""

    def parse_attr(self, parser: Parser) -> Attribute | None:
        if not isinstance(self.elt_type, IntegerType):
            return super().parse_attr(parser)
        parse_list = parser.parse_optional_comma_separated_list if self.is_optional else parser.parse_comma_separated_list
        elements = parse_list(parser.Delimiter.SQUARE, lambda: self._parse_element(parser))
        if elements is None:
            return None
        return DenseArrayBase(self.elt_type, BytesAttr(self.elt_type.pack(elements)))

    def _parse_element(self, parser: Parser) -> int:
        span = next_token(parser).span
        value = parser.parse_integer()
        assert isinstance(self.elt_type, IntegerType)  # parse_attr reads only integer arrays here
        low, high = self.elt_type.value_range()
        if not low <= value < high:
            parser.raise_error(f"integer {value} does not fit in {self.elt_type}", span)
        return value

    def print_attr(self, printer: Printer, attr: Attribute) -> None:
        if not isinstance(attr, DenseArrayBase) or not isinstance(attr.elt_type, IntegerType):
            super().print_attr(printer, attr)
            return
        with printer.in_square_brackets():
            printer.print_list(attr.iter_values(), printer.print_int)


@dataclasses.dataclass(frozen=True)
class _AttrDictDirective(AttrDictDirective):
    """xDSL's `attr-dict`, printing nothing at once for an op without attributes or
    properties of the dictionary (most ops): xDSL's merges and filters the dictionaries
    first, a tenth of printing a lowered program."""

    def print(self, printer: Printer, state: PrintingState, op: IRDLOperation) -> None:
        if op.attributes or not op.properties.keys().isdisjoint(self.expected_properties):
            super().print(printer, state, op)


_FASTER: dict[type[FormatDirective], type[FormatDirective]] = {
    DenseArrayAttributeVariable: _IntegerArrayVariable,
    AttrDictDirective: _AttrDictDirective,
}


def check_formats(op_classes: Iterable[type[IRDLOperation]]) -> None:
    """Compile the assembly format of each op class defined with `op_definition` that has
    one: a format that does not compile raises here (xDSL's `PyRDLOpDefinitionError`
    where xDSL compiles formats when a class is defined)."""
    for op_class in op_classes:
        if "format_program" in op_class.__dict__:
            op_class.__dict__["format_program"]()


def _flat_build(irdl_build: Callable[..., _Op]) -> Callable[..., _Op]:
    def build(cls: type[_Op], *, operands=None, result_types=None, attributes=None, properties=None,
              successors=None, regions=None) -> _Op:
        flat_operands, flat_types = _flat(operands, SSAValue), _flat(result_types, Attribute)
        if flat_operands is None or flat_types is None or successors or regions:
            return irdl_build(operands=operands, result_types=result_types, attributes=attributes,
                              properties=properties, successors=successors, regions=regions)
        op = cls.__new__(cls)
        init_flat(op, flat_operands, flat_types, properties, attributes=attributes)
        return op

    return build


def _flat(args: Sequence | None, kind: type) -> list | None:
    """The arguments of each definition, in order (a single one, a list or None); None
    when one is of another kind (an op standing for its result)."""
    flat = []
    for arg in args or ():
        if isinstance(arg, kind):
            flat.append(arg)
        elif isinstance(arg, Sequence) and all(isinstance(a, kind) for a in arg):
            flat.extend(arg)
        elif arg is not None:
            return None
    return flat


def signature(op: IRDLOperation) -> Hashable:
    """What `OpDef.verify` reads of an op besides its traits: its class, operand and
    result types, properties, attributes, the number of its successors, and of each
    region the number of blocks and the types of the entry block's arguments."""
    return (
        type(op),
        tuple(operand.type for operand in op.operands),
        tuple(result.type for result in op.results),
        tuple(op.properties.items()),
        tuple(op.attributes.items()),
        len(op.successor_uses),  # `successors` builds a view of them
        tuple((len(region.blocks), region.first_block and region.first_block.arg_types) for region in op.regions),
    )


class _Signatures:
    """The signatures whose definition checks passed."""

    LIMIT = 4096
    """Signatures held at most (a full set starts over)."""

    def __init__(self) -> None:
        self.passed: set[Hashable] = set()

    def add(self, key: Hashable) -> None:
        if len(self.passed) >= self.LIMIT:
            self.passed.clear()
        self.passed.add(key)


_PASSED = _Signatures()


class SignatureCheckedOpDef(OpDef):
    """xDSL's `OpDef` whose `verify` (which the `verify_` of the op's class calls before
    the op's own checks) checks an op in full once per signature, and only its traits
    after that."""

    @staticmethod
    def of(op_def: OpDef) -> SignatureCheckedOpDef:
        return SignatureCheckedOpDef(**{f.name: getattr(op_def, f.name) for f in dataclasses.fields(op_def) if f.init})

    def verify(self, op: Operation) -> None:
        assert isinstance(op, IRDLOperation)
        key: Hashable | None = signature(op)
        try:
            passed = key in _PASSED.passed
        except TypeError:  # an attribute that cannot be hashed: checked every time
            key, passed = None, False
        if passed:
            for trait in self.traits:
                trait.verify(op)
            return
        super().verify(op)  # one that raises leaves its signature out
        if key is not None:
            _PASSED.add(key)
