"""specialize-extents: give a fusion's dynamic extents the values of one run (nvFuser's
FusionExecutorCache concretizes a fusion for each set of input shapes it meets).

A program of dynamic extents (`fd.define_tensor([-1, h])`, `!fusion.tensor<bf16[?, 1024]>`)
runs at any extent, but the passes after this one decide less for it: the cost model
cannot price a chunk it cannot size, so a declared stream pipeline is kept whether or not
it pays, and the copy engines, whose symmetric buffers are sized when the program is
lowered, do not carry its collectives. Given the run's extents, this pass makes the
program the static one those inputs describe, and every later decision is made for them.

`extents`: the value of each dynamic logical axis of the fusion's arguments, in argument
order, then axis order (reduction axes included; for `%x: [?(2 didx, ?), 8192]`, `%w: [8192, ?]`: `extents=16384,4096`,
global extents, not a device's shard). Each argument's type takes them (a split's
dynamic piece becomes extent / the other pieces); then, in order, each op's result takes
the extents its operands imply (`ComputeOp.infer_axes`; a reshape's dynamic target axis
the one its group leaves, as torch infers a -1). A result whose extent its operands do
not fix stays dynamic. Without `extents` the pass changes nothing.

Refused, at the fusion: a count of extents that is not the number of dynamic argument
axes, a negative extent, and an extent that an argument's split does not divide; at the op: a result extent
that the result's own split does not divide, and operand extents the op cannot take together
(an add of extents 3 and 2, or of 2 where its result has 4).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, replace

from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp
from xdsl.ir import Operation, SSAValue
from xdsl.passes import ModulePass
from xdsl.utils.exceptions import VerifyException

from hostir_dialect.diagnostics import HostIRError, op_error
from hostir_dialect.fusion import AxisShape, ComputeOp, FuncOp, ReshapeOp
from hostir_dialect.symbols import fusions_to_lower
from hostir_dialect.tensor_type import DYNAMIC, Axis, Piece, TensorType, tensor_type

from .fusion_rewriting import retype


def dynamic_extents(t: TensorType, shape: Sequence[int]) -> list[int]:
    """What `extents` takes for an argument of type `t` (no reduction axis) given a tensor
    of global shape `shape`: the extents of its dynamic axes, in order."""
    return [shape[t.value_position(i)] for i in _dynamic_axes(t)]


def specialized_axis(axis: Axis, extent: int) -> Axis | None:
    """`axis` of a dynamic extent at `extent`: its dynamic piece takes what the others
    leave (None: they do not divide it)."""
    static = math.prod(p.extent for p in axis.pieces if p.extent != DYNAMIC)
    if extent % static:
        return None
    pieces = tuple(Piece(extent // static, p.parallel) if p.extent == DYNAMIC else p for p in axis.pieces)
    if not axis.is_split:
        pieces = (Piece(extent, axis.pieces[0].parallel),)
    return replace(axis, extent=extent, pieces=pieces)


def _dynamic_axes(t: TensorType) -> list[int]:
    return [i for i, a in enumerate(t.axes) if a.extent == DYNAMIC]


def _specialized(t: TensorType, extents: list[int]) -> TensorType | None:
    """`t` with `extents` given to its dynamic axes in order (None: a split does not
    divide one); where an extent is DYNAMIC the axis stays as it is."""
    axes = list(t.axes)
    for position, extent in zip(_dynamic_axes(t), extents):
        if extent == DYNAMIC:
            continue
        axis = specialized_axis(axes[position], extent)
        if axis is None:
            return None
        axes[position] = axis
    return t.with_(axes=tuple(axes))


def _implied_extents(op: ComputeOp) -> list[int]:
    """The extents of `op`'s dynamic result axes that its operands imply (DYNAMIC where
    they do not)."""
    result = tensor_type(op.result)
    inferred: list[AxisShape] = _reshape_axes(op) if isinstance(op, ReshapeOp) else op.infer_axes()
    return [inferred[i][0] for i in _dynamic_axes(result)]


def _reshape_axes(op: ReshapeOp) -> list[AxisShape]:
    """A reshape's result axes; in a group of static input extents, the one dynamic result
    axis takes the extent the others leave (torch's -1)."""
    source = [a.extent for a in tensor_type(op.input).value_axes()]
    result = tensor_type(op.result).axes
    shapes: list[AxisShape] = [(a.extent, a.kind) for a in result]
    for sources, targets in op.groups():
        dynamic = [t for t in targets if result[t].extent == DYNAMIC]
        if len(dynamic) != 1 or DYNAMIC in [source[s] for s in sources]:
            continue
        rest = math.prod(result[t].extent for t in targets if t != dynamic[0])
        total = math.prod(source[s] for s in sources)
        if rest and total % rest == 0:
            shapes[dynamic[0]] = (total // rest, result[dynamic[0]].kind)
    return shapes


def _specialize_arguments(func: FuncOp, extents: tuple[int, ...]) -> None:
    dynamic = [len(_dynamic_axes(a.type)) if isinstance(a.type, TensorType) else 0 for a in func.args]
    if sum(dynamic) != len(extents):
        raise op_error(func, f"specialize-extents: the arguments have {sum(dynamic)} dynamic extent(s), "
                             f"{len(extents)} given")
    if any(e < 0 for e in extents):
        raise op_error(func, f"specialize-extents: extents are at least 0, got {list(extents)}")
    given = iter(extents)
    for argument, count in zip(func.args, dynamic):
        values = [next(given) for _ in range(count)]
        if count:
            _retype_or_refuse(func, argument, values, f"argument {argument.index}")


def _retype_or_refuse(at: Operation, value: SSAValue, extents: list[int], what: str) -> None:
    specialized = _specialized(tensor_type(value), extents)
    if specialized is None:
        raise op_error(at, f"specialize-extents: {what} ({tensor_type(value)}) cannot take extents {extents}: "
                           "a split does not divide one")
    retype(value, specialized)


def specialize(func: FuncOp, extents: tuple[int, ...]) -> None:
    _specialize_arguments(func, extents)
    for op in list(func.body.block.ops):
        if not isinstance(op, ComputeOp):
            continue
        _check_operands_fit(op, extents)
        if not _dynamic_axes(tensor_type(op.result)):
            continue
        implied = _implied_extents(op)
        if any(e != DYNAMIC for e in implied):
            _retype_or_refuse(op, op.result, implied, "its result")
    func.update_function_type()


def check_fit(func: FuncOp, extents: tuple[int, ...], name: str) -> None:
    """Refuse, before a run, extents of its inputs that `func`'s ops cannot take together
    (an add of extents 3 and 2), which a program of dynamic extents would fail on inside
    the run: a copy of `func` specialized for them (a fraction of a millisecond; lowering
    it would take several). `func` is left as it is."""
    try:
        specialize(func.clone(), extents)
    except HostIRError as error:
        raise HostIRError(f"@{name}: inputs of dynamic extents {list(extents)} do not fit the fusion: {error}") from None


def _check_operands_fit(op: ComputeOp, extents: tuple[int, ...]) -> None:
    """Refuse, at `op`, extents its specialized operands cannot take together (an add of
    extents 3 and 2) or that contradict its static result: extents of one run that the
    fusion's dynamic extents allowed but no run can have."""
    try:
        op.verify_shape()
    except VerifyException as error:
        raise op_error(op, f"specialize-extents: at extents {list(extents)}, {error}") from None


@dataclass(frozen=True)
class SpecializeExtents(ModulePass):
    """Give the fusion's dynamic extents the values of one run, so later passes decide for them."""

    name = "specialize-extents"

    extents: tuple[int, ...] = ()
    """Each dynamic logical axis of the arguments, in order (global extents); none: change nothing."""

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        if not self.extents:
            return
        for func in fusions_to_lower(op):
            specialize(func, self.extents)
