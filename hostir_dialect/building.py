"""Building hostir's ops the way `Operation.create` does.

xDSL's IRDL builder (`IRDLOperation.__init__`) matches each operand, result, region and
successor argument to its definition, drops `None`s and fills in segment sizes before it
calls `Operation.__init__`: about 35 of the 55 µs it takes to build a `hir.alias_select`.
The passes build ops by the ten thousand (stream-parallel-type a buffer, a view and
streams for every chunked tensor of every loop, insert-deallocations a `hir.deallocate`
for every buffer). The builders of the ops without segment sizes have their operands and
results in order already, so they hand them to `Operation.__init__` directly, as
`Operation.create` does; the verifier checks the counts and types of every op as before.
Ops whose operand segment sizes are a property give their operands by definition
(`init_segmented`), which sets the sizes as the IRDL builder sets them.
"""

from __future__ import annotations

import functools
from collections.abc import Mapping, Sequence

from xdsl.dialects import arith
from xdsl.dialects.builtin import UNKNOWN_LOC, DenseArrayBase, IntegerAttr, i32
from xdsl.ir import Attribute, Operation, Region, SSAValue
from xdsl.irdl import AttrSizedOperandSegments

from .attributes import INDEX, index_attr


def init_flat(
    op: Operation,
    operands: Sequence[SSAValue | None] = (),
    result_types: Sequence[Attribute] = (),
    properties: Mapping[str, Attribute | None] | None = None,
    regions: Sequence[Region] = (),
    attributes: Mapping[str, Attribute | None] | None = None,
) -> None:
    """Initialize `op` (of a class without segment-size options) from its operands and
    result types in order; an optional operand or property that is None is left out, as
    the IRDL builder leaves it out."""
    Operation.__init__(
        op,
        operands=[v for v in operands if v is not None],
        result_types=result_types,
        properties=_present(properties),
        attributes=_present(attributes),
        location=UNKNOWN_LOC,  # given, xDSL imports it on every call
        regions=regions,
    )


def init_segmented(
    op: Operation,
    operands: Sequence[SSAValue | Sequence[SSAValue] | None],
    result_types: Sequence[Attribute] = (),
    properties: Mapping[str, Attribute | None] | None = None,
) -> None:
    """`init_flat` for a class whose operand segment sizes are a property
    (`AttrSizedOperandSegments(as_property=True)`): `operands` holds each operand
    definition's operands, in order (a value, a sequence, or None for an absent optional
    one)."""
    groups = [[] if g is None else [g] if isinstance(g, SSAValue) else list(g) for g in operands]
    sizes = {AttrSizedOperandSegments.attribute_name: _segment_sizes(tuple(len(g) for g in groups))}
    init_flat(op, [v for g in groups for v in g], result_types, {**_present(properties), **sizes})


@functools.lru_cache(maxsize=256)
def _segment_sizes(sizes: tuple[int, ...]) -> DenseArrayBase:
    return DenseArrayBase.from_list(i32, sizes)


def _present(attributes: Mapping[str, Attribute | None] | None) -> dict[str, Attribute]:
    return {name: a for name, a in (attributes or {}).items() if a is not None}


def constant_integer(value: SSAValue) -> int | None:
    """The integer an `arith.constant` defines `value` as (None where something else defines it)."""
    owner = value.owner
    if isinstance(owner, arith.ConstantOp) and isinstance(owner.value, IntegerAttr):
        return owner.value.value.data
    return None


def index_constant(value: int) -> arith.ConstantOp:
    """`arith.constant <value> : index`, as `ConstantOp.from_int_and_width` builds it but
    from a shared type and attribute (building an `IntegerAttr` verifies it and its type)."""
    return arith.ConstantOp.create(result_types=[INDEX], properties={"value": index_attr(value)}, location=UNKNOWN_LOC)
