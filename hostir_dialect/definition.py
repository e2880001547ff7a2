"""Defining hostir's ops: `irdl_op_definition`, with the definition checked once per signature.

xDSL's verifier of an op's definition (`OpDef.verify`) matches the op's operands, results,
regions and successors to their definitions, checks each against its constraint, then the
properties, the attributes and the traits: about 70 µs a `hir.alias_select`, two thirds of
verifying it. Every check but the regions' and the traits' reads only the op's class, its
operand and result types, its properties and its attributes: its *signature*. A lowered
program repeats a few signatures by the thousand (stream-parallel-type emits a view, a
buffer and its release for every chunked tensor of every loop), and verification runs on
every one of them twice (the input, then the pipeline's result). So an op whose signature
has passed the whole check before has only its traits checked (they read where the op
is); an op with regions or successors is checked in full each time.
"""

from __future__ import annotations

from collections.abc import Hashable
from typing import TypeVar

from xdsl.irdl import IRDLOperation, OpDef, irdl_op_definition

_Op = TypeVar("_Op", bound=IRDLOperation)


def op_definition(cls: type[_Op]) -> type[_Op]:
    """`irdl_op_definition`; the op's own `verify_` runs after the definition's checks, as
    there."""
    own_verify = getattr(cls, "verify_")
    cls = irdl_op_definition(cls)
    op_def = cls.get_irdl_definition()

    def verify_(op: _Op) -> None:
        _verify_definition(op, op_def)
        own_verify(op)

    cls.verify_ = verify_
    return cls


def signature(op: IRDLOperation) -> Hashable | None:
    """What `OpDef.verify` reads of an op besides its regions, successors and position;
    None for an op with regions or successors."""
    if op.regions or op.successors:
        return None
    return (
        type(op),
        tuple(operand.type for operand in op.operands),
        tuple(result.type for result in op.results),
        tuple(op.properties.items()),
        tuple(op.attributes.items()),
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


def _verify_definition(op: IRDLOperation, op_def: OpDef) -> None:
    key = signature(op)
    if key is not None and key in _PASSED.passed:
        for trait in op_def.traits:
            trait.verify(op)
        return
    op_def.verify(op)  # one that raises leaves its signature out
    if key is not None:
        _PASSED.add(key)
