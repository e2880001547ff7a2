"""decompose-reshardings: afterwards every op that moves data between devices is
exactly one communication -- a `fusion.set`, or a `fusion.reduce` of one axis that is
device-parallel as a whole -- and every other op computes locally (nvFuser's
DecomposeReshardingsPass, csrc/preseg_passes/decompose_reshardings.cpp).

In order:
1. `linear` with a bias whose contracted axis is device-parallel: the bias is added
   after the reduction across devices (`SplitShardedLinearBias`);
2. reductions of a device-parallel axis (`reduce`, `matmul`, `linear`) are rFactored
   into a local partial reduction that keeps the device axis as an iteration axis,
   then a `fusion.reduce` of that axis alone (`RFactorShardedReduce`,
   `RFactorShardedContraction`); a `reduce` of several device-parallel axes first
   becomes one per axis (`ReduceDeviceAxesOneAtATime`);
3. an op that both computes and reshards gets a `fusion.set` in front of each input
   whose sharding differs from its result's, the set taking the result's DID and
   Stream sharding so that the communication lands in the result's stream loop;
   with `insert-after=true` the op computes on its most parallel input's sharding and a
   set after it reshards the result (nvFuser's InsertReshardingAfter)
   (`InsertReshardingSets`); a set that changes DIDx and DIDy becomes two sets, one
   per type (`SplitByParallelType`); a set between two meshes that no one collective
   pairs (a 2-D mesh on a sharded side, meshes of different sizes, no device of both to
   root a scatter, an all-to-all) is gathered on the first mesh, broadcast whole and
   sharded locally on the second, as is a set within one mesh that trades axes between
   device types, which no sequence of single-type steps does (`ReshardThroughWhole`); a reduce between
   such meshes is reduced on the first, then moved so (`ReduceThenMoveBetweenMeshes`);
4. sets that reshard the same value to the same type (one in front of each of two
   consumers, say) are merged into the first, so that each value is communicated once
   per sharding (`share_reshardings`);
5. every remaining resharding op is checked to be one communication.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects import arith
from xdsl.dialects.builtin import Float64Type, FloatAttr, ModuleOp, f32, f64, i1
from xdsl.ir import Attribute, Operation, SSAValue
from xdsl.passes import ModulePass
from xdsl.pattern_rewriter import (
    GreedyRewritePatternApplier,
    PatternRewriter,
    PatternRewriteWalker,
    RewritePattern,
    op_type_rewrite_pattern,
)
from xdsl.rewriter import InsertPoint, Rewriter

from hostir_dialect.diagnostics import HostIRError, located_like, op_error
from hostir_dialect.fusion import (
    AddOp,
    AxesReduction,
    BroadcastOp,
    CastOp,
    ComputeOp,
    DivOp,
    EqOp,
    FuncOp,
    GroupedMmOp,
    Grouping,
    LinearOp,
    MatmulOp,
    MeanOp,
    MulOp,
    PermuteOp,
    ReduceKind,
    ReduceOp,
    ReshapeOp,
    SetOp,
    SqueezeOp,
    SubOp,
    VarOp,
    WhereOp,
    by_parallelism,
)
from hostir_dialect.sharding import have_different_shardings, is_resharding, reduces_sharded_axis
from hostir_dialect.symbols import fusions_to_lower
from hostir_dialect.tensor_type import (
    DEVICE_KINDS,
    DYNAMIC,
    Axis,
    IterKind,
    ParallelKind,
    Piece,
    TensorType,
    tensor_type,
)

from .sharding_policy import (
    INNER_SPLIT,
    PROPAGATED_TYPES,
    ShardingError,
    backward_axis_map,
    communication_problem,
    device_parallel_reduced_axes,
    device_piece_run,
    forward_axis_map,
    pairs_meshes_directly,
    propagate_parallel_types,
    same_device_axis,
    sharding_changes,
    shared_device_pieces,
)

# --------------------------------------------------------------------------- #
# Type helpers
# --------------------------------------------------------------------------- #


def _tensor(like: TensorType, axes: Sequence[Axis], mesh: object = "like") -> TensorType:
    """A tensor of `like`'s element type and mesh (or `mesh`) with these axes."""
    return TensorType.of(like.element_type, list(axes), like.mesh if mesh == "like" else mesh)  # type: ignore[arg-type]  # mesh: a Mesh or None when given


def _value_type(t: TensorType) -> TensorType:
    """What a `fusion.set` of `t` produces with the same sharding: its value axes."""
    return _tensor(t, t.value_axes())


@dataclass(frozen=True)
class DeviceSplit:
    """A logical axis whose outermost piece is device-parallel: D devices, the rest local."""

    parallel: ParallelKind
    devices: int
    local: Axis

    @property
    def device_axis(self) -> Axis:
        return Axis(self.devices, pieces=(Piece(self.devices, self.parallel),))


def device_split(op: Operation, t: TensorType, index: int) -> DeviceSplit | None:
    """The device split of value axis `index` of `t`, if it has one (an inner device piece
    is an error). A whole device axis holds one element per device, even a dynamic one."""
    axis = t.value_axes()[index]
    for position, piece in enumerate(axis.pieces):
        if piece.parallel.is_device:
            if position:
                raise op_error(op, INNER_SPLIT)
            devices = t.mesh.axis_size(piece.parallel)  # type: ignore[union-attr]  # a device piece has a mesh
            if not axis.is_split:
                return DeviceSplit(piece.parallel, devices, Axis(1))
            extent = DYNAMIC if axis.extent == DYNAMIC else axis.extent // devices
            local = Axis(extent, pieces=axis.pieces[1:])
            return DeviceSplit(piece.parallel, devices, local)
    return None


def _split_axis(axes: Sequence[Axis], index: int, split: DeviceSplit) -> list[Axis]:
    return [*axes[:index], split.device_axis, split.local, *axes[index + 1 :]]


def _as_reduction(axis: Axis) -> Axis:
    return axis.with_kind(IterKind.REDUCTION)


def _final_reduce(
    kind: ReduceKind, partial: SSAValue, device_index: int, result: TensorType, rewriter: PatternRewriter, like: Operation
) -> ReduceOp:
    """reduce `partial` over its device axis alone; the value axes and their layout stay
    the original result's, so every consumer sees the same value as before."""
    values = result.value_axes()
    devices = tensor_type(partial).value_axes()[device_index].extent
    axes = [*values[:device_index], Axis(devices, IterKind.REDUCTION), *values[device_index:]]
    order = result.value_allocation_order()
    if order is not None:  # the value axes after the inserted reduction axis move by one
        order = (*(k + (k >= device_index) for k in order), device_index)
    final = ReduceOp(kind, partial, [device_index], TensorType.of(result.element_type, axes, result.mesh, order))
    rewriter.insert(located_like(final, like))
    return final


def _emit(rewriter: PatternRewriter, like: Operation, op: ComputeOp) -> SSAValue:
    rewriter.insert(located_like(op, like))
    return op.result


# --------------------------------------------------------------------------- #
# 1. linear + bias over a sharded contraction
# --------------------------------------------------------------------------- #


Contraction = MatmulOp | LinearOp | GroupedMmOp


def contraction_operands(op: Contraction) -> tuple[SSAValue, SSAValue]:
    """(a, b) of `a @ b`: a linear's input and weight [N, K] (transposed by the rFactor)."""
    return (op.input, op.weight) if isinstance(op, LinearOp) else (op.a, op.b)


def contracted_axis(op: Contraction, operand: SSAValue) -> int:
    """The value axis of `operand` that `op` contracts (K)."""
    rank = len(tensor_type(operand).value_axes())
    if isinstance(op, MatmulOp | GroupedMmOp) and operand is op.b and rank >= 2:
        return rank - 2
    return rank - 1


def operand_splits(op: Contraction) -> list[DeviceSplit | None]:
    """The device split of the contracted axis K of each operand (a, b)."""
    return [device_split(op, tensor_type(v), contracted_axis(op, v)) for v in contraction_operands(op)]


def contraction_split(op: Contraction) -> DeviceSplit | None:
    """The device split of the contracted axis K, which both operands must share
    (ShardContractionOperand makes them); a static one where one operand's K is dynamic,
    which gives the partial product's reduction axis its extent."""
    splits = operand_splits(op)
    result_k = tensor_type(op.result).axes[-1]
    if splits == [None, None] and not (result_k.parallel_types() & set(DEVICE_KINDS)):
        return None
    if not _shard_alike(*splits):
        raise op_error(op, "a contraction over a device-parallel axis needs both operands sharded alike on it")
    if isinstance(op, LinearOp) and op.stacked_axes():
        raise op_error(op, "a linear with a stack of weights over a device-parallel K is not supported; shard the stack or N")
    return next((s for s in splits if s is not None and s.local.extent != DYNAMIC), splits[0])


def _shard_alike(x: DeviceSplit | None, y: DeviceSplit | None) -> bool:
    """Do both splits put the same K blocks on the same devices?"""
    return x is not None and y is not None and _layout(x) == _layout(y)


def _layout(split: DeviceSplit) -> tuple:
    """What a split says about where elements are, whatever the extents (one operand's K may be dynamic)."""
    return split.parallel, split.devices, tuple(p.parallel for p in split.local.pieces)


class ShardContractionOperand(RewritePattern):
    """c = matmul a[.., M, K(D didx, K/D)], b[.., K, N]   (K device-parallel in a only)
    ->  b' = set b [.., K(D didx, K/D), N]   (on a's mesh)
        c  = matmul a, b'
    so that each device holds the same K block of both operands and the rFactor below
    applies. The rule: the operand whose K is not device-parallel, or b where both are
    but differently, takes the other's split; the sharded operand is never gathered.
    Where b is replicated on a's mesh each device already holds its block (a scatter within
    the mesh moves K/D of b to each member), where a gather would bring (D-1)/D of a to
    every device and contract all of K on each. b gives up its own placement of the type
    it takes (an axis sharded on it moves to K: an all-to-all) and keeps the others the
    mesh has alike; convert-op-to-communication refuses, located at the set, what no
    collective does."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: MatmulOp | LinearOp | GroupedMmOp, rewriter: PatternRewriter):
        splits = operand_splits(op)
        if splits == [None, None] or _shard_alike(*splits):
            return
        a, b = contraction_operands(op)
        (sharded, split), plain = ((b, splits[1]), a) if splits[0] is None else ((a, splits[0]), b)
        assert split is not None
        target = _sharded_on_contraction(op, sharded, plain)
        if not _shard_alike(device_split(op, target, contracted_axis(op, plain)), split):
            return  # no outer split of K to replay (a broadcast K, another mesh size): reported as unlike
        resharded = SetOp(plain, target)
        rewriter.insert(located_like(resharded, op), InsertPoint.before(op))
        op.operands[list(op.operands).index(plain)] = resharded.result
        rewriter.notify_op_modified(op)


def _sharded_on_contraction(op: Contraction, sharded: SSAValue, plain: SSAValue) -> TensorType:
    """`plain`'s value axes on `sharded`'s mesh, its K split as `sharded`'s (every device
    type of it: an inner one is refused); its other axes keep the device types that mesh
    has alike, but those K takes. A broadcast K (of one element, on one device) too."""
    source = tensor_type(plain)
    reference = _value_type(tensor_type(sharded))
    reference_k, k = contracted_axis(op, sharded), contracted_axis(op, plain)
    moved = [p for p in DEVICE_KINDS if p in reference.axes[reference_k].parallel_types()]
    axes = [_without(a, _lost_types(set(moved), source, reference)) for a in source.value_axes()]
    axes[k] = Axis(axes[k].extent)  # an iteration axis: propagation leaves broadcast ones alone
    try:
        target = propagate_parallel_types(reference, _tensor(source, axes, reference.mesh), {reference_k: k}, moved)
    except ShardingError as error:
        raise op_error(op, str(error)) from None
    axes = list(target.axes)
    axes[k] = axes[k].with_kind(source.value_axes()[k].kind)
    return target.with_(axes=tuple(axes))


class ReduceWholeAxesLocally(RewritePattern):
    """c = reduce x dims [d] -> [.., rE(D didx, E/D), ..]   (d device-parallel in c only)
    ->  c = reduce x dims [d] -> [.., rE, ..]
    and alike a matmul or linear whose K is device-parallel in its result only. Every
    device holds the whole reduced axes and reduces them: nothing is left to combine
    across devices, and consumers see the same value."""

    def match_and_rewrite(self, op: Operation, rewriter: PatternRewriter):
        if isinstance(op, AxesReduction):
            local = not device_parallel_reduced_axes(op)
        elif isinstance(op, MatmulOp | LinearOp | GroupedMmOp):
            local = operand_splits(op) == [None, None]
        else:
            return
        if not local or not reduces_sharded_axis(op):
            return
        result = tensor_type(op.result)
        axes = tuple(_without(a, set(DEVICE_KINDS)) if a.is_reduction else a for a in result.axes)
        rewriter.replace_value_with_new_type(op.result, result.with_(axes=axes))


class StackedLinearAsMatmul(RewritePattern):
    """y = linear x[M, K], w[G.., N, K] (bias b[G.., N])?   (K device-parallel)
    ->  y = matmul x, (permute w [G.., K, N]) (+ broadcast b [G.., 1, N])
    A linear with a stack of weights is a batched matmul of the one input: the rFactor of
    a contraction then applies. An input of rank above 2 would have to be flattened first,
    whose shards a reshape may not keep: refused."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: LinearOp, rewriter: PatternRewriter):
        if not op.stacked_axes() or operand_splits(op) == [None, None]:
            return
        if len(tensor_type(op.input).value_axes()) > 2:
            raise op_error(op, "a linear with a stack of weights over a device-parallel K takes an input of rank <= 2")
        weight = tensor_type(op.weight)
        rank = len(weight.value_axes())
        order = [*range(rank - 2), rank - 1, rank - 2]
        transposed = _emit(rewriter, op, PermuteOp(op.weight, order, _tensor(weight, [weight.value_axes()[i] for i in order])))
        result = tensor_type(op.result)
        if op.bias is None:
            rewriter.replace(op, located_like(MatmulOp(op.input, transposed, result), op))
            return
        product = _emit(rewriter, op, MatmulOp(op.input, transposed, result))
        bias = tensor_type(op.bias)
        rows = len(result.value_axes()) - rank + 1  # the input's rows, between the stack and N
        axes = [*bias.value_axes()[:-1], *[Axis(1, IterKind.BROADCAST)] * rows, bias.value_axes()[-1]]
        new = list(range(rank - 2, rank - 2 + rows))
        broadcast = _emit(rewriter, op, BroadcastOp(op.bias, new, _tensor(bias, axes))) if rows else op.bias
        rewriter.replace(op, located_like(AddOp(product, broadcast, result.value_type()), op))


class SplitShardedLinearBias(RewritePattern):
    """y = linear x, w bias b   (K device-parallel)
    ->  y0 = linear x, w ; bb = broadcast b ; y = add y0, bb
    so that the bias is added once, after the partial results are reduced."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: LinearOp, rewriter: PatternRewriter):
        if op.bias is None or contraction_split(op) is None:
            return
        result = tensor_type(op.result)
        y0 = _emit(rewriter, op, LinearOp(op.input, op.weight, None, result))
        bias, rank = tensor_type(op.bias), len(result.value_axes())
        if rank > 1:
            axes = [Axis(1, IterKind.BROADCAST)] * (rank - 1) + bias.value_axes()
            bias_value = _emit(rewriter, op, BroadcastOp(op.bias, list(range(rank - 1)), _tensor(bias, axes)))
        else:
            bias_value = op.bias
        add = located_like(AddOp(y0, bias_value, result.value_type()), op)
        rewriter.replace(op, add)


class SumsForShardedStatistics(RewritePattern):
    """m = mean x dims D        (an axis of D device-parallel in x)
    ->  s = reduce sum x dims D ; m = mul s, 1/N                 (N: the elements reduced)
    v = var x dims D correction c
    ->  m (as above) ; d = sub x, broadcast m ; v = mul (reduce sum (mul d, d) dims D), 1/(N - c)
    Sums are what the rFactor below splits into a local sum and one communication; the
    variance takes two passes over x, as torch.var does. Where an axis of D has a dynamic
    extent, N is counted at run time: a sum of ones over D, communicated like the sum, in
    float32 (float64 for float64), the type torch divides a mean in."""

    def match_and_rewrite(self, op: Operation, rewriter: PatternRewriter):
        if not isinstance(op, MeanOp | VarOp) or not device_parallel_reduced_axes(op):
            return
        source = tensor_type(op.input)
        result = tensor_type(op.result)
        count = _reduced_count(op, rewriter)
        total = _emit(rewriter, op, ReduceOp(ReduceKind.SUM, op.input, op.reduced_axes(), result))
        mean = _divided(total, count, rewriter, op)
        if isinstance(op, VarOp):
            values = source.value_axes()
            broadcast_axes = [Axis(1, IterKind.BROADCAST) if d in op.reduced_axes() else a for d, a in enumerate(values)]
            centered = _emit(rewriter, op, BroadcastOp(mean, op.reduced_axes(), _tensor(source, broadcast_axes)))
            deviation = _emit(rewriter, op, SubOp(op.input, centered, _value_type(source)))
            squares = _emit(rewriter, op, MulOp(deviation, deviation, _value_type(source)))
            total = _emit(rewriter, op, ReduceOp(ReduceKind.SUM, squares, op.reduced_axes(), result))
            mean = _divided(total, _less(count, op.correction.value.data, rewriter, op), rewriter, op)
        rewriter.replace(op, [], [mean])


def _reduced_count(op: MeanOp | VarOp, rewriter: PatternRewriter) -> int | SSAValue:
    """How many elements `op` reduces into each of its results: the product of the
    reduced extents where all are static; else a tensor of the result's shape in the
    type divided in (`_working_type`), the sum over the reduced axes of ones shaped like
    the input (`where(x == x, 1, 1)`: one also where x is NaN). In float32 the count is
    exact up to 2**24 elements and off by less than float32's own rounding beyond."""
    source = tensor_type(op.input)
    extents = [source.value_axes()[d].extent for d in op.reduced_axes()]
    if DYNAMIC not in extents:
        return math.prod(extents)
    working = _working_type(tensor_type(op.result).element_type)
    each = _scalar(rewriter, op, FloatAttr(1.0, Float64Type()))
    present = _emit(rewriter, op, EqOp(op.input, op.input, _value_type(source).with_(element_type=i1)))
    ones = _emit(rewriter, op, WhereOp(present, each, each, _value_type(source).with_(element_type=working)))
    counted = tensor_type(op.result).with_(element_type=working)
    return _emit(rewriter, op, ReduceOp(ReduceKind.SUM, ones, op.reduced_axes(), counted))


def _working_type(element_type: Attribute) -> Attribute:
    """What a counted mean divides in: float64 for float64, else float32, as torch does."""
    return f64 if element_type == f64 else f32


def _less(count: int | SSAValue, correction: int, rewriter: PatternRewriter, like: Operation) -> int | SSAValue:
    """count - correction (a variance's divisor)."""
    if isinstance(count, int):
        return count - correction
    if not correction:
        return count
    subtrahend = _scalar(rewriter, like, FloatAttr(float(correction), Float64Type()))
    return _emit(rewriter, like, SubOp(count, subtrahend, tensor_type(count).value_type()))


def _divided(value: SSAValue, count: int | SSAValue, rewriter: PatternRewriter, like: Operation) -> SSAValue:
    """`value / count`, of `value`'s value type: a static count as a multiplication by its
    reciprocal; a counted one divided in its own type (`_working_type`)."""
    if isinstance(count, int):
        return _scaled(value, 1 / count if count else math.inf, rewriter, like)
    value_type = tensor_type(value).value_type()
    working = tensor_type(count).value_type()
    quotient = _emit(rewriter, like, DivOp(_cast(value, working, rewriter, like), count, working))
    return _cast(quotient, value_type, rewriter, like)


def _cast(value: SSAValue, to: TensorType, rewriter: PatternRewriter, like: Operation) -> SSAValue:
    """`value` as `to` (a tensor of the same axes): itself where it already is."""
    if tensor_type(value).value_type().element_type == to.element_type:
        return value
    return _emit(rewriter, like, CastOp(value, to))


def _scalar(rewriter: PatternRewriter, like: Operation, value: FloatAttr) -> SSAValue:
    """An `arith.constant` of `value`, inserted before the op being rewritten."""
    constant = arith.ConstantOp(value)
    rewriter.insert(located_like(constant, like))
    return constant.result


def _scaled(value: SSAValue, factor: float, rewriter: PatternRewriter, like: Operation) -> SSAValue:
    """`value * factor`, of `value`'s value type."""
    factor_value = _scalar(rewriter, like, FloatAttr(factor, Float64Type()))
    return _emit(rewriter, like, MulOp(value, factor_value, tensor_type(value).value_type()))


# --------------------------------------------------------------------------- #
# 2. rFactor of reductions over device-parallel axes
# --------------------------------------------------------------------------- #


class ReduceDeviceAxesOneAtATime(RewritePattern):
    """c = reduce x dims [.., d1, .., d2, ..]   with x's axes d1 and d2 device-parallel
    ->  p = reduce x dims [.., d1, ..]           (every reduced axis but d2; d2 stays sharded)
        c = reduce p dims [d2']
    one reduction per device-parallel axis, each then rFactored alone (`RFactorShardedReduce`):
    a sum over both axes of a 2-D mesh is an all-reduce along each. Every kind of
    `fusion.reduce` is associative. The axis whose device type the result keeps on another
    axis (a reduce-scatter) is reduced last, where the result's layout is made."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: ReduceOp, rewriter: PatternRewriter):
        sharded = device_parallel_reduced_axes(op)
        if len(sharded) < 2:
            return
        last = _reduced_last(op, sharded)
        first = [i for i in op.reduced_axes() if i != last]
        source, result = tensor_type(op.input), tensor_type(op.result)
        axes = [result.axes[i] if i in first else a for i, a in enumerate(source.value_axes())]
        partial = _emit(rewriter, op, ReduceOp(op.kind.data, op.input, first, _tensor(source, axes)))
        final = _final_reduce(op.kind.data, partial, last - sum(i < last for i in first), result, rewriter, op)
        rewriter.replace(op, [], [final.result])


def _reduced_last(op: ReduceOp, sharded: list[int]) -> int:
    """Of the device-parallel reduced axes, the one to reduce last: one whose device type
    the result keeps on an iteration axis, else the last."""
    kept = set().union(*(a.parallel_types() for a in tensor_type(op.result).value_axes()))
    axes = tensor_type(op.input).value_axes()
    return next((d for d in sharded if axes[d].parallel_types() & kept), sharded[-1])


class RFactorShardedReduce(RewritePattern):
    """c = reduce x dims [.., d, ..]   with x's axis d = E(D didx, E/D)
    ->  x2 = reshape x               [.., D didx, E/D, ..]   (a local view)
        p  = reduce x2 dims [.., d+1, ..]                     (local partial)
        c  = reduce p dims [d']       [.., rD, ..]            (one communication)
    A whole-axis device axis (E = D) needs no reshape."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: ReduceOp, rewriter: PatternRewriter):
        sharded = device_parallel_reduced_axes(op)
        if not sharded or communication_problem(op) is None:
            return
        if len(sharded) > 1:
            return  # ReduceDeviceAxesOneAtATime splits it first
        (d,) = sharded
        source = tensor_type(op.input)
        axes = source.value_axes()
        split = device_split(op, source, d)
        assert split is not None
        others = [i for i in op.reduced_axes() if i != d]
        if not (axes[d].is_split or others or reduces_sharded_axis(op)):
            return  # already reduces the device axis alone; it reshards in other ways
        partial_input, local_dims = op.input, others
        if axes[d].is_split:
            split_axes = _split_axis(axes, d, split)
            partial_input = _emit(rewriter, op, ReshapeOp(op.input, _tensor(source, split_axes)))
            local_dims = [i if i < d else i + 1 for i in others] + [d + 1]
        partial = partial_input
        if local_dims:
            kept = tensor_type(partial_input).value_axes()
            partial_axes = [_as_reduction(a) if i in local_dims else a for i, a in enumerate(kept)]
            partial = _emit(
                rewriter, op, ReduceOp(op.kind.data, partial_input, local_dims, _tensor(source, partial_axes))
            )
        device_index = d - sum(i < d for i in others)
        final = _final_reduce(op.kind.data, partial, device_index, tensor_type(op.result), rewriter, op)
        rewriter.replace(op, [], [final.result])


class RFactorShardedContraction(RewritePattern):
    """c = matmul a[B.., M, K(D didx, K/D)], b[B.., K(D didx, K/D), N]   (or linear)
    ->  a' = permute(reshape a)  [D didx, B.., M, K/D]
        b' = permute(reshape b)  [D didx, B.., K/D, N]
        p  = matmul a', b'       [D didx, B.., M, N, r(K/D)]   (local partial)
        c  = reduce sum p dims [0]  [rD, B.., M, N]             (one communication)
    The operand with fewer batch axes gets broadcast ones after D, so that D meets D
    (torch aligns batch axes from the right). A 1-D operand gets its missing M or N as
    a broadcast axis, squeezed after the reduction. A linear's weight [N, K] is
    transposed first."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: MatmulOp | LinearOp, rewriter: PatternRewriter):
        split = contraction_split(op)
        if split is None:
            return
        a, b = contraction_operands(op)
        if isinstance(op, LinearOp):
            assert op.bias is None, "SplitShardedLinearBias runs first"
            weight = tensor_type(b)
            b = _emit(rewriter, op, PermuteOp(b, [1, 0], _tensor(weight, list(reversed(weight.value_axes())))))
        result = tensor_type(op.result)
        a_rank, b_rank = (len(tensor_type(v).value_axes()) for v in (a, b))
        batch = len(result.value_axes()) - (a_rank >= 2) - (b_rank >= 2)
        # Each operand is reshaped by its own split: they are alike, but where one K is
        # dynamic only its own pieces say how its extents pair (the reshape is exact).
        a_split, b_split = operand_splits(op)
        assert a_split is not None and b_split is not None, "contraction_split checked them alike"
        a_local = _device_batch_operand(a, a_rank - 1, a_split, batch, rewriter, op, lhs=True)
        b_local = _device_batch_operand(b, max(b_rank - 2, 0), b_split, batch, rewriter, op, lhs=False)
        # After D the partial has the batch axes, M and N; `positions` are those that are
        # axes of the result (not inserted for a 1-D operand), in the result's order.
        positions = [*range(batch), *[batch] * (a_rank >= 2), *[batch + 1] * (b_rank >= 2)]
        partial_type = _partial_type(a_local, b_local, split, result, positions)
        partial = _emit(rewriter, op, MatmulOp(a_local, b_local, partial_type))
        reduced = _final_reduce(ReduceKind.SUM, partial, 0, _with_axes_at(result, positions, partial_type), rewriter, op)
        inserted = [p for p in range(batch + 2) if p not in positions]
        if inserted:
            rewriter.replace(op, located_like(SqueezeOp(reduced.result, inserted, result.value_type()), op))
        else:
            rewriter.replace(op, [], [reduced.result])


class RFactorShardedGroupedMm(RewritePattern):
    """c = grouped_mm a[B.., M, K(D didx, K/D)], b[B.., G, K(D didx, K/D), N], o   (or N in groups)
    ->  a' = permute(reshape a)  [D didx, B.., M, K/D]
        b' = permute(reshape b)  [D didx, B.., G, K/D, N]
        p  = grouped_mm a', b', o  [D didx, B.., M, N, r(K/D)]   (local partial, D a batch axis)
        c  = reduce sum p dims [0]  [rD, B.., M, N]                (one communication)
    as RFactorShardedContraction does for a matmul; K in groups cannot be cut by devices."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: GroupedMmOp, rewriter: PatternRewriter):
        split = contraction_split(op)
        if split is None:
            return
        if op.grouping == Grouping.K:
            raise op_error(op, "a grouped_mm with K in groups cannot contract over a device-parallel K: devices would cut the groups")
        a, b = (_device_axis_first(v, contracted_axis(op, v), split, rewriter, op) for v in contraction_operands(op))
        result = tensor_type(op.result)
        on_a = tensor_type(a)
        values = [_without(axis, _lost_types({split.parallel}, result, on_a)) for axis in result.value_axes()]
        partial_type = _tensor(result, [split.device_axis, *values, Axis(split.local.extent, IterKind.REDUCTION)], on_a.mesh)
        partial = _emit(rewriter, op, GroupedMmOp(a, b, op.offsets, op.grouping, partial_type))
        final = _final_reduce(ReduceKind.SUM, partial, 0, result, rewriter, op)
        rewriter.replace(op, [], [final.result])


def _partial_type(a: SSAValue, b: SSAValue, split: DeviceSplit, result: TensorType, positions: list[int]) -> TensorType:
    """The type of `matmul a, b` (the local partial): its inferred axes, D device-parallel,
    those at `positions` after D parallelized as the result's axes, without the
    contraction's device type: each device computes its whole partial product, and a
    result axis sharded on that type (a reduce-scatter) is only sharded by the final reduce.
    Nor with a device type that a's mesh, where the partial lives, lacks or sizes otherwise
    (the final reduce reshards between the meshes)."""
    inferred = MatmulOp(a, b, _tensor(result, [])).infer_axes()[1:-1]
    origin = dict(zip(positions, result.value_axes()))
    on_a = tensor_type(a)
    dropped = _lost_types({split.parallel}, result, on_a)
    axes = [_without(origin[p], dropped) if p in origin else Axis(*inferred[p]) for p in range(len(inferred))]
    return _tensor(result, [split.device_axis, *axes, Axis(split.local.extent, IterKind.REDUCTION)], on_a.mesh)


def _with_axes_at(result: TensorType, positions: list[int], partial: TensorType) -> TensorType:
    """The partial's axes after D, each at `positions` replaced by the result's axis there;
    the result's own value type (its layout too) where nothing was inserted for a 1-D operand."""
    origin = dict(zip(positions, result.value_axes()))
    axes = [origin.get(p, axis) for p, axis in enumerate(partial.value_axes()[1:])]
    return result.value_type() if len(axes) == len(origin) else _tensor(result, axes)


def _lost_types(moved: set[ParallelKind], source: TensorType, onto: TensorType) -> set[ParallelKind]:
    """`moved`, and the device types `onto`'s mesh lacks or sizes otherwise than
    `source`'s: those a sharding of `source` cannot keep on `onto`'s mesh."""
    return moved | {p for p in DEVICE_KINDS if not same_device_axis(source, onto, p)}


def _without(axis: Axis, parallel: set[ParallelKind]) -> Axis:
    return axis.with_serial(parallel) if parallel & axis.parallel_types() else axis


def _device_batch_operand(
    value: SSAValue, k: int, split: DeviceSplit, batch: int, rewriter: PatternRewriter, like: Operation, lhs: bool
) -> SSAValue:
    """`value` with its contracted axis `k` reshaped into [D, K/D] and D moved to the
    front, then broadcast axes inserted: after D, as many as it lacks of `batch` batch
    axes; in a 1-D operand, its missing M (`lhs`) or N."""
    rank = len(tensor_type(value).value_axes())
    local = _device_axis_first(value, k, split, rewriter, like)
    new = list(range(1, 1 + batch - max(rank - 2, 0)))
    if rank == 1:
        new.append(len(new) + (1 if lhs else 2))
    if not new:
        return local
    axes = tensor_type(local).value_axes()
    for d in new:
        axes.insert(d, Axis(1, IterKind.BROADCAST))
    return _emit(rewriter, like, BroadcastOp(local, new, _tensor(tensor_type(value), axes)))


def _device_axis_first(
    value: SSAValue, index: int, split: DeviceSplit, rewriter: PatternRewriter, like: Operation
) -> SSAValue:
    """reshape axis `index` into [D, local] and move D to the front (local no-ops: the
    device axis has local extent 1)."""
    t = tensor_type(value)
    axes = _split_axis(t.value_axes(), index, split)
    reshaped = _emit(rewriter, like, ReshapeOp(value, _tensor(t, axes)))
    if index == 0:
        return reshaped
    order = [index, *range(index), *range(index + 1, len(axes))]
    return _emit(rewriter, like, PermuteOp(reshaped, order, _tensor(t, [axes[i] for i in order])))


# --------------------------------------------------------------------------- #
# 3. sets before (or after) ops that compute and reshard
# --------------------------------------------------------------------------- #


@dataclass
class InsertReshardingSets(RewritePattern):
    """y = op(x, ..) resharding  ->  x' = set x (y's sharding) ; y = op(x', ..)
    or, with insert_after, or where no set in front can give the op local inputs (a
    reshape splitting an axis whose inner part the result shards):
    y0 = op(x, ..) (x's sharding, y's Stream) ; y = set y0."""

    insert_after: bool

    def match_and_rewrite(self, op: Operation, rewriter: PatternRewriter):
        if not isinstance(op, ComputeOp) or isinstance(op, SetOp) or reduces_sharded_axis(op):
            return
        if communication_problem(op) is None:
            return
        try:
            if self.insert_after or not _sets_before_suffice(op):
                _reshard_after(op, rewriter)
            _reshard_before(op, rewriter)
        except ShardingError as error:
            raise op_error(op, str(error)) from None


def _sets_before_suffice(op: ComputeOp) -> bool:
    """Would sets giving each input the result's sharding leave `op` computing locally?"""
    result = tensor_type(op.result)
    return not any(
        have_different_shardings(_input_like(op, value), result, op.sharding_axis_map(value), derived=op.derived_axes(value))
        for value in op.tensor_inputs()
    )


def _input_like(op: ComputeOp, value: SSAValue) -> TensorType:
    """`value` sharded as `op`'s result (what a set in front of the op would give it)."""
    return _resharded_like(tensor_type(op.result), tensor_type(value), _value_index_map(value, backward_axis_map(op, value)))


def _reshard_before(op: ComputeOp, rewriter: PatternRewriter) -> None:
    result = tensor_type(op.result)
    for value in dict.fromkeys(op.tensor_inputs()):
        source = tensor_type(value)
        if not have_different_shardings(source, result, op.sharding_axis_map(value), derived=op.derived_axes(value)):
            continue
        target = _input_like(op, value)
        if target == _value_type(source):
            continue  # nothing a set could change; validation reports the op
        resharded = SetOp(value, target)
        rewriter.insert(located_like(resharded, op), InsertPoint.before(op))
        for index, operand in enumerate(op.operands):
            if operand is value and operand is not op.out:
                op.operands[index] = resharded.result
        rewriter.notify_op_modified(op)


def _resharded_like(result: TensorType, source: TensorType, axis_map: dict[int, int]) -> TensorType:
    """`source`'s value axes sharded as `result` (DID and Stream) on its mesh."""
    plain = [a.unparallelized() for a in source.value_axes()]
    mesh = result.mesh if result.mesh is not None else source.mesh
    return propagate_parallel_types(result, _tensor(source, plain, mesh), axis_map, PROPAGATED_TYPES)


def _value_index_map(value: SSAValue, axis_map: dict[int, int]) -> dict[int, int]:
    """Re-target a map onto `value`'s logical axes to its value-axis positions."""
    position = {logical: k for k, logical in enumerate(tensor_type(value).value_positions())}
    return {source: position[target] for source, target in axis_map.items()}


def _reshard_after(op: ComputeOp, rewriter: PatternRewriter) -> None:
    result = tensor_type(op.result)
    reference = by_parallelism(op.tensor_inputs())[0]
    plain = _tensor(result, [a.unparallelized() for a in result.axes], tensor_type(reference).mesh)
    identity = {i: i for i in range(result.rank)}
    local = propagate_parallel_types(result, plain, identity, (ParallelKind.STREAM,))
    local = propagate_parallel_types(tensor_type(reference), local, forward_axis_map(op, reference), DEVICE_KINDS)
    if local == result:
        return
    computed = rewriter.replace_value_with_new_type(op.result, local)
    resharded = SetOp(computed, result.value_type())
    rewriter.insert(located_like(resharded, op), InsertPoint.after(op))
    computed.replace_uses_with_if(resharded.result, lambda use: use.operation is not resharded)


class ReshardThroughWhole(RewritePattern):
    """y = set x   that neither one collective nor one per device type carries: from mesh S
    to mesh R, which no one collective pairs (`pairs_meshes_directly`: a 2-D mesh on the
    sharded side, meshes of different sizes, a scatter whose root would be in neither, an
    all-to-all between meshes), or within one mesh changing several device types with no
    step that changes one alone (`SplitByParallelType`: axes traded between DIDx and DIDy)
    ->  w = set x  (S, whole: gathered on S where x is sharded) ;
        t = set w  (R, whole: a broadcast from a device of S; within one mesh, no such step) ;
        y = set t  (the shard each device of R holds already: no communication)
    Moves the whole tensor to every device of R where a pairing collective would move
    one part to each: correct where the alternative is a refusal."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: SetOp, rewriter: PatternRewriter):
        value = op.input
        for whole in _whole_steps(op):
            step = SetOp(value, whole)
            rewriter.insert(located_like(step, op), InsertPoint.before(op))
            value = step.result
        if value is not op.input:
            op.operands[0] = value
            rewriter.notify_op_modified(op)


def _whole_steps(op: SetOp) -> list[TensorType]:
    """The whole tensors `op` goes through (none where a collective, or one per device
    type, carries it)."""
    source, target = tensor_type(op.input), tensor_type(op.result)
    if source.mesh is None or target.mesh is None:
        return []
    if source.mesh != target.mesh:
        return [] if pairs_meshes_directly(op) else [_whole(side) for side in (source, target) if side.is_spread()]
    several = len(sharding_changes(source, target, op.axis_map(op.input))) > 1
    whole = _whole(target)  # y's Stream sharding, so every set lands in y's stream loop
    if not (several and source.is_spread()) or whole == target or _single_type_step(op) is not None:
        # One communication, a gain of shards, SplitByParallelType's, or a gather to y
        # itself: a step to y would be `op` again (the pattern matched it without end).
        return []
    return [whole]


class ReduceThenMoveBetweenMeshes(RewritePattern):
    """y = reduce x dims [d]   from mesh S to mesh R, which no one collective carries (a
    reduce-scatter between meshes, a reduce from a 2-D mesh)
    ->  t = reduce x dims [d]  (on S, axis d reduced, every other axis as in x: an all-reduce)
        y = set t              (to R, y's value axes: moved as any set between meshes)
    A set's result has no reduction axes, so y's consumers see its value axes alone."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: ReduceOp, rewriter: PatternRewriter):
        source, result = tensor_type(op.input), tensor_type(op.result)
        if source.mesh is None or result.mesh is None or source.mesh == result.mesh:
            return
        d = _reduced_whole_device_axis(op)
        if d is None or _reduces_to_mesh_directly(op):
            return
        axes = [_as_reduction(a.with_serial(set(DEVICE_KINDS))) if i == d else a for i, a in enumerate(source.value_axes())]
        reduced = _emit(rewriter, op, ReduceOp(op.kind.data, op.input, [d], _tensor(source, axes)))
        value = TensorType.of(result.element_type, result.value_axes(), result.mesh, result.value_allocation_order())
        moved = _emit(rewriter, op, SetOp(reduced, value))
        rewriter.replace(op, [], [moved])


def _reduced_whole_device_axis(op: ReduceOp) -> int | None:
    """The one axis `op` reduces, if it is a whole device-parallel axis (as RFactorShardedReduce
    leaves every reduction across devices)."""
    sharded = device_parallel_reduced_axes(op)
    if sharded != op.reduced_axes() or len(sharded) != 1 or tensor_type(op.input).value_axes()[sharded[0]].is_split:
        return None
    return sharded[0]


def _reduces_to_mesh_directly(op: ReduceOp) -> bool:
    """One reduce per device of the result's mesh, rooted there, from a 1-D mesh: the
    result whole (convert-op-to-communication's plan)."""
    return tensor_type(op.input).mesh.ndim == 1 and not tensor_type(op.result).is_spread()  # type: ignore[union-attr]  # matched with a mesh


def _whole(t: TensorType) -> TensorType:
    """What a set of `t` produces on its mesh with no device type (every device holds all
    of it): its value axes, a set's result having no reduction axes."""
    return _tensor(t, [a.with_serial(set(DEVICE_KINDS)) for a in t.value_axes()])


class SplitByParallelType(RewritePattern):
    """y = set x   changing several device types within one mesh
    ->  t = set x  (one type changed, the others as in x) ; y = set t  (the others changed)
    DIDx first when that gives a single-type set, else DIDy, else DIDz (the second set
    is split again while it changes more than one); t keeps y's Stream sharding, so
    every set lands in y's stream loop."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: SetOp, rewriter: PatternRewriter):
        middle = _single_type_step(op)
        if middle is not None:
            step = SetOp(op.input, middle)
            rewriter.insert(located_like(step, op), InsertPoint.before(op))
            op.operands[0] = step.result
            rewriter.notify_op_modified(op)


def _single_type_step(op: SetOp) -> TensorType | None:
    """For a set changing several device types within one mesh, the type of a first step
    that changes one of them alone, if there is one (DIDx first)."""
    source, target = tensor_type(op.input), tensor_type(op.result)
    axis_map = op.axis_map(op.input)
    changed = sharding_changes(source, target, axis_map)
    if source.mesh != target.mesh or len(changed) < 2:
        return None
    for first in changed:
        middle = _changed_alone(source, target, axis_map, first, [t for t in changed if t != first])
        if middle is not None:
            return middle
    return _innermost_device_piece_step(source, target)


def _innermost_device_piece_step(source: TensorType, target: TensorType) -> TensorType | None:
    """For an axis split into several device pieces (`?(2 didx, 2 didy, 2 didz, ?)`,
    nvFuser's `outer_split` repeated), which `_changed_alone` cannot replay one type at a
    time: the side with more device pieces in front than the other shares, with its
    innermost one merged into the local rest. Gathered (or sharded) innermost first, each
    step moves one type behind device pieces both sides share: one communication."""
    if source.rank != target.rank:
        return None
    for index, (a, b) in enumerate(zip(source.axes, target.axes)):
        shared = shared_device_pieces(a, b)
        if device_piece_run(a) > shared:
            return source.with_(axes=_replaced(source.axes, index, _without_innermost_device_piece(a)))
        if device_piece_run(b) > shared:
            return target.with_(axes=_replaced(target.axes, index, _without_innermost_device_piece(b)))
    return None


def _without_innermost_device_piece(axis: Axis) -> Axis:
    """`axis` with its innermost device piece made serial (merged with a serial piece behind it)."""
    return axis.with_serial({axis.pieces[device_piece_run(axis) - 1].parallel})


def _replaced(axes: Sequence[Axis], index: int, axis: Axis) -> tuple[Axis, ...]:
    return tuple(axis if i == index else a for i, a in enumerate(axes))


def _changed_alone(
    source: TensorType, target: TensorType, axis_map: dict[int, int], first: ParallelKind, rest: list[ParallelKind]
) -> TensorType | None:
    """`target`'s axes with `first` placed as in `target` and every other device type as in
    `source`, if going through it changes `first` alone and then the `rest`."""
    identity = {i: i for i in range(target.rank)}
    plain = _tensor(target, [a.unparallelized() for a in target.axes])
    try:
        middle = propagate_parallel_types(source, plain, axis_map, [t for t in DEVICE_KINDS if t != first])
        middle = propagate_parallel_types(target, middle, identity, (first, ParallelKind.STREAM))
    except ShardingError:
        return None
    if sharding_changes(source, middle, axis_map) != [first] or sharding_changes(middle, target, identity) != rest:
        return None
    return middle


# --------------------------------------------------------------------------- #
# 4. one communication per value and sharding
# --------------------------------------------------------------------------- #


def share_reshardings(func: FuncOp) -> None:
    """Replace every resharding `fusion.set` that repeats an earlier one (same input,
    same result type) by that earlier one, which comes before all its uses: a fusion
    is one block."""
    first: dict[tuple[SSAValue, Attribute], SetOp] = {}
    for op in list(func.body.block.ops):
        if not isinstance(op, SetOp) or op.out is not None or not is_resharding(op):
            continue
        earlier = first.setdefault((op.input, op.result.type), op)
        if earlier is not op:
            Rewriter.replace_op(op, [], [earlier.result])


# --------------------------------------------------------------------------- #
# 5. validation
# --------------------------------------------------------------------------- #


def validate(func: FuncOp) -> None:
    for op in func.body.block.ops:
        problem = communication_problem(op)
        if problem is not None:
            raise op_error(op, f"resharding op cannot be lowered to one communication: {problem}")


def _rewrite(func: FuncOp, patterns: list[RewritePattern]) -> None:
    # No DCE: an unused op of the user's fusion is not this pass's to delete.
    walker = PatternRewriteWalker(GreedyRewritePatternApplier(patterns, dce_enabled=False))
    try:
        walker.rewrite_region(func.body)
    except HostIRError as error:
        error.__notes__ = []  # the walker attaches a print of the whole module
        raise


@dataclass(frozen=True)
class DecomposeReshardings(ModulePass):
    """Make every op that moves data between devices exactly one communication.

    `-p 'decompose-reshardings{insert-after=true}'` reshards an op's result instead of
    its inputs (nvFuser's InsertReshardingAfter).
    """

    name = "decompose-reshardings"

    insert_after: bool = False

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        stages: list[list[RewritePattern]] = [
            [ShardContractionOperand(), ReduceWholeAxesLocally(), SumsForShardedStatistics(), StackedLinearAsMatmul(),
             SplitShardedLinearBias(),
             ReduceDeviceAxesOneAtATime(), RFactorShardedReduce(), RFactorShardedContraction(),
             RFactorShardedGroupedMm()],
            [InsertReshardingSets(self.insert_after), SplitByParallelType(), ReshardThroughWhole(),
             ReduceThenMoveBetweenMeshes()],
        ]
        for func in fusions_to_lower(op):
            for patterns in stages:
                _rewrite(func, patterns)
                func.update_function_type()
            share_reshardings(func)
            validate(func)
