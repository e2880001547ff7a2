"""Building hostir's ops the way `Operation.create` does.

xDSL's IRDL builder (`IRDLOperation.__init__`) matches each operand, result, region and
successor argument to its definition, drops `None`s and fills in segment sizes before it
calls `Operation.__init__`: about 35 of the 55 µs it takes to build a `hir.alias_select`.
The passes build ops by the ten thousand (stream-parallel-type a buffer, a view and
streams for every chunked tensor of every loop, insert-deallocations a `hir.deallocate`
for every buffer). The builders of the ops without segment sizes have their operands and
results in order already, so they hand them to `Operation.__init__` directly, as
`Operation.create` does; the verifier checks the counts and types of every op as before.
Ops with segment sizes (`AttrSizedOperandSegments`) keep the IRDL builder.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from xdsl.ir import Attribute, Operation, Region, SSAValue


def init_flat(
    op: Operation,
    operands: Sequence[SSAValue | None] = (),
    result_types: Sequence[Attribute] = (),
    properties: Mapping[str, Attribute] | None = None,
    regions: Sequence[Region] = (),
    attributes: Mapping[str, Attribute] | None = None,
) -> None:
    """Initialize `op` (of a class without segment-size options) from its operands and
    result types in order; an optional operand that is None is left out, as the IRDL
    builder leaves it out."""
    Operation.__init__(
        op,
        operands=[v for v in operands if v is not None],
        result_types=result_types,
        properties=properties or {},
        attributes=attributes or {},
        regions=regions,
    )
