"""Building the ops the passes build over and over, the way `Operation.create` does.

xDSL's IRDL builder (`IRDLOperation.__init__`) matches each operand, result, region and
successor argument to its definition, drops `None`s and fills in segment sizes before it
calls `Operation.__init__`: about 35 of the 55 µs it takes to build a `hir.alias_select`.
stream-parallel-type builds a buffer, a view and streams for every chunked tensor of every
loop, and insert-deallocations a `hir.deallocate` for every buffer. Their builders have
their operands and results as flat lists already, and their ops have no segment sizes, so
they hand them to `Operation.__init__` directly, as `Operation.create` does; the verifier
checks the counts and types of every op as before.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from xdsl.ir import Attribute, Operation, SSAValue


def init_flat(
    op: Operation,
    operands: Sequence[SSAValue] = (),
    result_types: Sequence[Attribute] = (),
    properties: Mapping[str, Attribute] | None = None,
) -> None:
    """Initialize `op` (of a class without segment-size options) from its operands and
    result types in order, optional ones left out rather than None."""
    Operation.__init__(op, operands=operands, result_types=result_types, properties=properties or {})
