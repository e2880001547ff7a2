"""Eager torch semantics of every `fusion` compute op: one table from op class to a
kernel builder.

`KERNELS[type(op)](op, ctx)` is called once, when a program is compiled, and returns a
`Kernel`: `fresh(*operands)` computes a new tensor that never aliases an operand (values
are immutable), `into(out, *operands)` writes into a bound destination and returns it, and
`view(*operands)`, for ops whose value is a view of their input (set, permute, broadcast,
reshape...), returns that view: the evaluator uses it where no op writes either buffer.
Operands are the op's non-destination operands in order (tensors and scalars). The same
table serves the reference evaluation of a `fusion.func` (global shapes, `ctx.rank` None)
and compute ops on local shards in a host program (`ctx.rank` set). A compiled backend for
`post_on_stream` units can replace a unit's kernels without touching the evaluator.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, NamedTuple

import torch
from xdsl.dialects.builtin import IntegerType
from xdsl.ir import SSAValue

from hostir_dialect import fusion
from hostir_dialect.fusion import ComputeOp, ReduceKind
from hostir_dialect.tensor_type import DYNAMIC, TensorType, tensor_type

from . import random_numbers
from .attention import Attention, batched, dropout_keep
from .layouts import global_linear_index, global_positions, logical_shape, torch_dtype


class UnsupportedOp(Exception):
    """A kernel cannot be built for this op (the evaluator reports it at the op)."""


class Kernel(NamedTuple):
    fresh: Callable[..., torch.Tensor]
    into: Callable[..., torch.Tensor]
    view: Callable[..., torch.Tensor] | None = None
    result_shape: Callable[..., tuple[int, ...]] | None = None
    """The shape `fresh` gives for these operands, where it costs nothing to know: a
    destination whose shape is known only at run time is then written in place once
    checked, not through a copy of a fresh result."""
    writes_laid_out: bool = False
    """`into` writes a destination laid out in another allocation order in place (a
    result typed so gets a fresh buffer of its layout, written once, not a copy of a
    result computed in logical order)."""


@dataclass(frozen=True)
class OpContext:
    """What a kernel builder may know: the rank (None: global reference semantics)."""

    rank: int | None
    device: torch.device

    def shape(self, value: SSAValue) -> tuple[int, ...]:
        return logical_shape(tensor_type(value), self.rank)

    def dtype(self, value: SSAValue) -> torch.dtype:
        return torch_dtype(value.type)

    def is_local(self) -> bool:
        return self.rank is not None


def copy_into(out: torch.Tensor, value: torch.Tensor) -> torch.Tensor:
    """`out.copy_(value)` that refuses to broadcast: a shape mismatch is a bug, not a feature."""
    if out.shape != value.shape:
        raise ValueError(f"destination has shape {list(out.shape)} but the value has shape {list(value.shape)}")
    return out.copy_(value)


def _clone(t: torch.Tensor) -> torch.Tensor:
    return t.clone(memory_format=torch.contiguous_format)


def _view_kernel(view: Callable[..., torch.Tensor]) -> Kernel:
    """An op that is a view of its input: fresh results copy it, destinations receive it."""
    return Kernel(lambda *args: _clone(view(*args)), lambda out, *args: copy_into(out, view(*args)), view)


# -- elementwise ---------------------------------------------------------------

_UNARY: dict[str, Callable[..., torch.Tensor]] = {
    "neg": torch.neg, "abs": torch.abs, "exp": torch.exp, "log": torch.log, "sqrt": torch.sqrt,
    "rsqrt": torch.rsqrt, "sin": torch.sin, "cos": torch.cos, "tanh": torch.tanh,
    "sigmoid": torch.sigmoid, "reciprocal": torch.reciprocal,
}


def _unary(function: Callable[..., torch.Tensor]):
    def build(op: ComputeOp, ctx: OpContext) -> Kernel:
        return Kernel(function, lambda out, x: function(x, out=out))

    return build


def _silu(op: ComputeOp, ctx: OpContext) -> Kernel:
    silu_out = torch.ops.aten.silu.out
    return Kernel(torch.nn.functional.silu, lambda out, x: silu_out(x, out=out))


def _gelu(op: fusion.GeluOp, ctx: OpContext) -> Kernel:
    approximate = op.approximate.data.value
    gelu_out = torch.ops.aten.gelu.out

    def fresh(x: torch.Tensor) -> torch.Tensor:
        return torch.nn.functional.gelu(x, approximate=approximate)

    return Kernel(fresh, lambda out, x: gelu_out(x, approximate=approximate, out=out))


def _relu(op: ComputeOp, ctx: OpContext) -> Kernel:
    return Kernel(torch.relu, lambda out, x: torch.clamp_min(x, 0, out=out))


_BINARY: dict[str, Callable[..., torch.Tensor]] = {
    "add": torch.add, "sub": torch.sub, "mul": torch.mul, "div": torch.div,
    "maximum": torch.maximum, "minimum": torch.minimum, "pow": torch.pow,
    "eq": torch.eq, "ne": torch.ne, "lt": torch.lt, "le": torch.le, "gt": torch.gt, "ge": torch.ge,
}
_TENSOR_SCALAR: dict[Callable[..., torch.Tensor], Callable[..., torch.Tensor]] = {torch.maximum: torch.clamp_min, torch.minimum: torch.clamp_max}
"""maximum/minimum take two tensors only; with a scalar they are clamps."""


def _truncating_div(a: Any, b: Any, **options: Any) -> torch.Tensor:
    """Integer division as the fusion's integers divide: truncating toward zero."""
    return torch.div(a, b, rounding_mode="trunc", **options)


def _binary(function: Callable[..., torch.Tensor]):
    def build(op: fusion.BinaryComputeOp, ctx: OpContext) -> Kernel:
        lhs_tensor = isinstance(op.lhs.type, TensorType)
        rhs_tensor = isinstance(op.rhs.type, TensorType)
        f = function
        if f is torch.div and isinstance(tensor_type(op.result).element_type, IntegerType):
            f = _truncating_div
        if not rhs_tensor:
            f = _TENSOR_SCALAR.get(f, f)
        if lhs_tensor:
            return Kernel(f, lambda out, a, b: f(a, b, out=out))
        # A scalar lhs becomes a 0-d tensor of the tensor operand's element type, on the
        # CPU: torch passes such a tensor to a device kernel as an argument, so no
        # host-to-device copy is made (none could be captured in a CUDA graph).
        scalar = _cpu_scalars(ctx.dtype(op.rhs))
        return Kernel(lambda a, b: f(scalar(a), b), lambda out, a, b: f(scalar(a), b, out=out))

    return build


def _cpu_scalars(dtype: torch.dtype) -> Callable[[Any], torch.Tensor]:
    """Scalar -> 0-d CPU tensor of `dtype`. The tensor of the last scalar object is kept:
    a constant operand (the same object every run) is converted once."""
    last: list[Any] = [None, None]

    def scalar(value: Any) -> torch.Tensor:
        if last[0] is not value:
            last[:] = [value, torch.tensor(value, dtype=dtype)]
        return last[1]

    return scalar


def _set(op: ComputeOp, ctx: OpContext) -> Kernel:
    return Kernel(_clone, copy_into, lambda x: x)


def _cast(op: ComputeOp, ctx: OpContext) -> Kernel:
    dtype = ctx.dtype(op.result)
    return Kernel(lambda x: x.to(dtype, copy=True), copy_into)


# -- shape ops -----------------------------------------------------------------


def _permute(op: fusion.PermuteOp, ctx: OpContext) -> Kernel:
    dims = tuple(op.dims.get_values())
    return _view_kernel(lambda x: x.permute(dims))


def _reshape(op: fusion.ReshapeOp, ctx: OpContext) -> Kernel:
    # On a rank, the result's local shape comes from its type: a reshape of local data.
    shape = ctx.shape(op.result)
    if list(shape).count(DYNAMIC) > 1:  # torch infers one -1: the others come from the input
        shape_of = _result_shape(op, shape)
        return Kernel(lambda x: _clone(x).view(shape_of(x)), lambda out, x: copy_into(out, x.reshape(out.shape)),
                      lambda x: x.reshape(shape_of(x)))
    return Kernel(lambda x: _clone(x).view(shape), lambda out, x: copy_into(out, x.reshape(out.shape)),
                  lambda x: x.reshape(shape))


def _result_shape(op: fusion.ReshapeOp, shape: tuple[int, ...]) -> Callable[[torch.Tensor], tuple[int, ...]]:
    """The result shape of `op` for an input tensor: `shape` (the result's, one local
    extent per axis) with each dynamic extent the elements of its group of input axes
    (`ReshapeOp.groups`) over the group's static result extents."""
    inferred = []  # (result axis, input axes of its group, static extents of the group's other axes)
    for sources, targets in op.groups():
        dynamic = [t for t in targets if shape[t] == DYNAMIC]
        if len(dynamic) > 1:
            raise UnsupportedOp(f"result axes {dynamic} are dynamic in one group of axes: their extents are not "
                                "determined by the input's")
        if dynamic:
            inferred.append((dynamic[0], sources, math.prod(shape[t] for t in targets if t != dynamic[0])))

    def shape_of(x: torch.Tensor) -> tuple[int, ...]:
        extents = list(shape)
        for target, sources, static in inferred:
            elements = math.prod(x.shape[s] for s in sources)
            if static and elements % static:
                raise ValueError(f"input axes {sources} hold {elements} elements at run time, which the static "
                                 f"extents of result axis {target}'s group ({static} elements) do not divide")
            extents[target] = elements // static if static else 0
        return tuple(extents)

    return shape_of


def _broadcast(op: fusion.BroadcastOp, ctx: OpContext) -> Kernel:
    rank = tensor_type(op.result).rank
    new = sorted(d + rank if d < 0 else d for d in op.dims.get_values())

    def view(x: torch.Tensor) -> torch.Tensor:
        for d in new:
            x = x.unsqueeze(d)
        return x

    return _view_kernel(view)


def _squeeze(op: fusion.SqueezeOp, ctx: OpContext) -> Kernel:
    rank = len(ctx.shape(op.input))
    dims = tuple(sorted(d + rank if d < 0 else d for d in op.dims.get_values()))
    return _view_kernel(lambda x: x.squeeze(dims))


def _sharded_axes(value: SSAValue) -> set[int]:
    """Value axes (torch dims) of `value` split over several devices: a device-parallel
    piece on a mesh axis of one device splits nothing."""
    t = tensor_type(value)
    return {k for k, a in enumerate(t.value_axes())
            if any(p.parallel.is_device and t.mesh is not None and t.mesh.axis_size(p.parallel) > 1 for p in a.pieces)}


def _slice(op: fusion.SliceOp, ctx: OpContext) -> Kernel:
    # A slice cutting a sharded axis reshards: the evaluator refuses it unless lowered.
    starts, stops, steps = (list(x.get_values()) for x in (op.starts, op.stops, op.steps))
    index = tuple(slice(a, b, c) for a, b, c in zip(starts, stops, steps))
    return _view_kernel(lambda x: x[index])


def _select(op: fusion.SelectOp, ctx: OpContext) -> Kernel:
    dim = op.axis
    if ctx.is_local() and dim in _sharded_axes(op.input):
        raise UnsupportedOp(f"selects on axis {dim}, which is sharded across devices")
    return _view_kernel(lambda x, i: x.select(dim, i))


# -- reductions and contractions ----------------------------------------------


def _prod(x: torch.Tensor, dims: tuple[int, ...], dtype: torch.dtype) -> torch.Tensor:
    for d in sorted(dims, reverse=True):
        x = torch.prod(x, d, dtype=dtype)
    return x


def _reduce(op: fusion.ReduceOp, ctx: OpContext) -> Kernel:
    dims, dtype = tuple(op.reduced_axes()), ctx.dtype(op.result)
    kind = op.kind.data
    if kind == ReduceKind.PROD:
        return Kernel(lambda x: _prod(x, dims, dtype), lambda out, x: copy_into(out, _prod(x, dims, dtype)))
    if kind == ReduceKind.SUM:
        # torch sums integers into int64; the result keeps the element type its type declares
        return Kernel(lambda x: torch.sum(x, dims, dtype=dtype), lambda out, x: torch.sum(x, dims, dtype=dtype, out=out))
    function = torch.amax if kind == ReduceKind.MAX else torch.amin
    return Kernel(lambda x: function(x, dims), lambda out, x: function(x, dims, out=out))


def _contraction_into(function: Callable[..., torch.Tensor], out_variant: Callable[..., torch.Tensor]):
    """`into` for matmul and linear. Their `out=` variants may re-stride a destination
    that is not contiguous (silently, or with a warning from C++) and so write elements
    to the wrong places of the buffer it views: such a destination gets a copy of a fresh
    result. A contiguous destination of the right shape is written in place."""

    def into(out: torch.Tensor, *operands: torch.Tensor) -> torch.Tensor:
        if out.is_contiguous():
            return out_variant(out, *operands)
        return copy_into(out, function(*operands))

    return into


def _refuse_integer_contraction_on_gpus(op: fusion.MatmulOp | fusion.LinearOp | fusion.GroupedMmOp,
                                       ctx: OpContext) -> None:
    """torch multiplies integer matrices on CPUs only ("addmm_cuda" not implemented):
    refused when the program is compiled, on every rank, from the types."""
    dtype = ctx.dtype(op.result)
    if ctx.device.type == "cuda" and not (dtype.is_floating_point or dtype.is_complex):
        raise UnsupportedOp(f"multiplies {dtype} matrices, for which torch has no CUDA kernel; cast the operands "
                            "to a floating type")


def _matmul(op: fusion.MatmulOp, ctx: OpContext) -> Kernel:
    _refuse_integer_contraction_on_gpus(op, ctx)
    return _with_epilogue(op, ctx, _product(op, ctx))


def _product(op: fusion.MatmulOp, ctx: OpContext) -> Kernel:
    if 1 in (len(tensor_type(op.a).value_axes()), len(tensor_type(op.b).value_axes())):
        # torch.matmul(out=) wants a 1-D operand's unsqueezed shape in `out`: compute, then copy.
        return Kernel(torch.matmul, lambda out, a, b: copy_into(out, torch.matmul(a, b)))
    b_shape, result_rank = ctx.shape(op.b), len(ctx.shape(op.result))
    if len(b_shape) > 2 and all(e == 1 for e in b_shape[:-2]) and DYNAMIC not in b_shape:
        return _matrix_times_broadcast_matrix(b_shape[-2:], result_rank - len(ctx.shape(op.a)))
    return Kernel(torch.matmul, _contraction_into(torch.matmul, lambda out, a, b: torch.matmul(a, b, out=out)))


def _matrix_times_broadcast_matrix(kn: tuple[int, ...], extra_axes: int) -> Kernel:
    """a @ b where b is one matrix with broadcast batch axes ([1, ..., 1, K, N], as stream
    pipelines make the weight of every chunk): one GEMM on a's rows (of any extents). torch.matmul
    would expand b to a's batch and copy it (a batched GEMM). The result has `extra_axes`
    leading axes of one element where b has more batch axes than a."""
    k, n = kn
    leading = (1,) * extra_axes

    def result_shape(a: torch.Tensor, b: torch.Tensor) -> tuple[int, ...]:
        return (*leading, *a.shape[:-1], n)

    def fresh(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
        return torch.mm(a.reshape(-1, k), b.reshape(k, n)).view(result_shape(a, b))

    def into_dense(out: torch.Tensor, a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
        torch.mm(a.reshape(-1, k), b.reshape(k, n), out=out.view(-1, n))
        return out

    into_logical = _contraction_into(fresh, into_dense)

    def into(out: torch.Tensor, a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
        outer = _outermost_batch_axis(out) if extra_axes == 0 and a.dim() == out.dim() else None
        if out.is_contiguous() or outer is None:
            return into_logical(out, a, b)
        # Laid out with a batch axis outermost (a reduce-scatter's member axis inside a
        # stream axis, reorder-sharded-axis): each of its slices is dense rows.
        for i in range(out.shape[outer]):
            _rows_times_matrix_into(out.select(outer, i), a.select(outer, i), b.reshape(k, n))
        return out

    return Kernel(fresh, into, result_shape=result_shape, writes_laid_out=True)


def _outermost_batch_axis(out: torch.Tensor) -> int | None:
    """The batch axis (not one of the last two) `out`'s memory is laid out along
    outermost, where each of its slices is dense; None otherwise."""
    if out.dim() < 3 or 0 in out.shape:
        return None
    outer = max(range(out.dim()), key=lambda d: (out.stride(d), out.shape[d]))
    if outer >= out.dim() - 2 or not out.select(outer, 0).is_contiguous():
        return None
    return outer


def _rows_times_matrix_into(out: torch.Tensor, a: torch.Tensor, b: torch.Tensor) -> None:
    """out = a @ b for rows `a` ([..., m, k]) and one matrix `b`, `out` dense: one GEMM
    where a's rows are one matrix, else one strided-batched GEMM over a's leading axes
    (b read once: a batch stride of 0), else a's rows copied first."""
    k, n = b.shape
    try:
        torch.mm(a.view(-1, k), b, out=out.view(-1, n))
        return
    except RuntimeError:  # a's batch axes are not one run of rows
        pass
    try:
        rows = a.view(-1, a.shape[-2], k)
    except RuntimeError:
        torch.mm(a.reshape(-1, k), b, out=out.view(-1, n))
        return
    torch.bmm(rows, b.expand(rows.shape[0], k, n), out=out.view(-1, a.shape[-2], n))


def _stacked_linear(x: torch.Tensor, w: torch.Tensor, b: torch.Tensor | None = None) -> torch.Tensor:
    """A linear with a stack of weights [G.., N, K]: one per weight, stacked first."""
    stacked, batch = w.shape[:-2], x.shape[:-1]
    out = torch.matmul(x.reshape(-1, x.shape[-1]), w.transpose(-1, -2)).reshape(*stacked, *batch, w.shape[-2])
    if b is not None:
        out = out + b.reshape(*stacked, *[1] * len(batch), w.shape[-2])
    return out


def _linear(op: fusion.LinearOp, ctx: OpContext) -> Kernel:
    _refuse_integer_contraction_on_gpus(op, ctx)
    return _with_epilogue(op, ctx, _linear_product(op))


def _linear_product(op: fusion.LinearOp) -> Kernel:
    linear = torch.nn.functional.linear
    if op.stacked_axes():
        return Kernel(_stacked_linear, lambda out, *operands: copy_into(out, _stacked_linear(*operands)))
    if len(tensor_type(op.input).value_axes()) == 1:
        # aten.linear.out re-strides the destination of a 1-D input: compute, then copy.
        return Kernel(linear, lambda out, *operands: copy_into(out, linear(*operands)))
    linear_out = torch.ops.aten.linear.out
    return Kernel(linear, _contraction_into(linear, lambda out, x, w, b=None: linear_out(x, w, b, out=out)),
                  result_shape=lambda x, w, b=None: (*x.shape[:-1], *w.shape[:-1]))


_ACTIVATIONS: dict[fusion.Epilogue, Callable[[torch.Tensor], torch.Tensor]] = {
    fusion.Epilogue.GELU_TANH: lambda x: torch.nn.functional.gelu(x, approximate="tanh"),
    fusion.Epilogue.RELU: torch.relu,
}
_IN_PLACE: dict[fusion.Epilogue, Callable[[torch.Tensor], torch.Tensor]] = {
    fusion.Epilogue.GELU_TANH: lambda x: torch.ops.aten.gelu_(x, approximate="tanh"),
    fusion.Epilogue.RELU: torch.relu_,
}
GEMM_EPILOGUE_DTYPES = (torch.bfloat16, torch.float16, torch.float32)


def _with_epilogue(op: fusion.MatmulOp | fusion.LinearOp, ctx: OpContext, product: Kernel) -> Kernel:
    """The contraction with its epilogue: on GPUs, where the operands are matrices (or
    batches of rows times one matrix), one cuBLASLt GEMM whose epilogue adds the bias and
    applies the activation as it writes the result (`torch._addmm_activation`), so the
    result is written once; elsewhere the product, then the activation in place."""
    epilogue = fusion.epilogue_of(op)
    if epilogue is None:
        return product
    activation, in_place = _ACTIVATIONS[epilogue], _IN_PLACE[epilogue]
    separate = Kernel(lambda *args: activation(product.fresh(*args)),
                      lambda out, *args: in_place(product.into(out, *args)), result_shape=product.result_shape)
    gemm = _gemm_with_epilogue(op, ctx, epilogue, separate) if ctx.device.type == "cuda" else None
    return separate if gemm is None else gemm


def _gemm_with_epilogue(op: fusion.MatmulOp | fusion.LinearOp, ctx: OpContext, epilogue: fusion.Epilogue,
                        separate: Kernel) -> Kernel | None:
    """`_addmm_activation(bias, rows, matrix)` for the op, where its shapes allow it: the
    second operand one matrix (its leading extents 1) of no more dimensions than the
    first. Extents known only at run time are read from the operands; a matmul without
    bias then adds zeros made for its column count, or runs `separate` where none exist
    yet and a CUDA graph is being captured (zeros made in a capture are filled only when
    that graph replays, and another graph could read them first)."""
    dtype = ctx.dtype(op.result)
    if isinstance(op, fusion.MatmulOp):
        a_shape, b_shape = ctx.shape(op.a), ctx.shape(op.b)
    elif op.stacked_axes():
        return None  # one product per weight of the stack
    else:
        a_shape, b_shape = ctx.shape(op.input), ctx.shape(op.weight)
    if dtype not in GEMM_EPILOGUE_DTYPES or len(a_shape) < 2 or not 2 <= len(b_shape) <= len(a_shape) or \
            any(e != 1 for e in b_shape[:-2]):
        return None
    use_gelu = epilogue == fusion.Epilogue.GELU_TANH
    linear = isinstance(op, fusion.LinearOp)
    zeros = _ZerosByColumns(dtype, ctx.device)

    def operands(a: torch.Tensor, b: torch.Tensor, bias: torch.Tensor | None = None):
        matrix = b.reshape(b.shape[-2:])
        matrix = matrix.t() if linear else matrix
        return (zeros[matrix.shape[1]] if bias is None else bias), a.reshape(-1, a.shape[-1]), matrix

    def fresh(*args: torch.Tensor) -> torch.Tensor:
        bias, rows, matrix = operands(*args)
        if bias is None:
            return separate.fresh(*args)
        return torch._addmm_activation(bias, rows, matrix, use_gelu=use_gelu).view(*args[0].shape[:-1], matrix.shape[1])

    def into(out: torch.Tensor, *args: torch.Tensor) -> torch.Tensor:
        bias, rows, matrix = operands(*args)
        if bias is None:
            return separate.into(out, *args)
        if not out.is_contiguous():
            return copy_into(out, fresh(*args))
        torch._addmm_activation(bias, rows, matrix, use_gelu=use_gelu, out=out.view(-1, matrix.shape[1]))
        return out

    return Kernel(fresh, into)


class _ZerosByColumns:
    """A bias of zeros for each column count, made outside CUDA-graph captures."""

    def __init__(self, dtype: torch.dtype, device: torch.device):
        self.dtype, self.device = dtype, device
        self.made: dict[int, torch.Tensor] = {}

    def __getitem__(self, columns: int) -> torch.Tensor | None:
        zeros = self.made.get(columns)
        if zeros is None and not (self.device.type == "cuda" and torch.cuda.is_current_stream_capturing()):
            zeros = self.made[columns] = torch.zeros(columns, dtype=self.dtype, device=self.device)
        return zeros


KernelBuilder = Callable[[Any, OpContext], Kernel]


# -- nvFuser's other ops ------------------------------------------------------
# Positional ops (iota, triu, the random ones) compute from each element's position in
# the unsharded tensor (runtime/layouts.py), so a shard holds what one device would.


def _linear_positions(ctx: OpContext, t: TensorType, shape: Sequence[int]) -> torch.Tensor:
    return global_linear_index(t, ctx.rank, shape, ctx.device)


def _cat(op: fusion.CatOp, ctx: OpContext) -> Kernel:
    dim = op.axis
    return Kernel(lambda *xs: torch.cat(xs, dim), lambda out, *xs: torch.cat(xs, dim, out=out))


def _expand(op: fusion.ExpandOp, ctx: OpContext) -> Kernel:
    shape, sources = ctx.shape(op.result), op.extent_sources()

    def view(x: torch.Tensor, like: torch.Tensor | None = None) -> torch.Tensor:
        target = [like.shape[s] if s >= 0 and like is not None else e for e, s in zip(shape, sources)]
        return x.expand(target)

    return _view_kernel(view)


def _where(op: fusion.WhereOp, ctx: OpContext) -> Kernel:
    dtype = ctx.dtype(op.result)

    def fresh(c: Any, a: Any, b: Any) -> torch.Tensor:
        # A scalar condition is filled on the device: torch.tensor would copy it from the
        # host, which a CUDA graph cannot capture.
        condition = c if isinstance(c, torch.Tensor) else torch.full((), bool(c), device=ctx.device)
        return torch.where(condition, a, b).to(dtype)

    return Kernel(fresh, lambda out, c, a, b: copy_into(out, fresh(c, a, b)))


def _iota(op: fusion.IotaOp, ctx: OpContext) -> Kernel:
    t, dtype = tensor_type(op.result), ctx.dtype(op.result)

    def fresh(start: Any, step: Any) -> torch.Tensor:
        positions, _ = global_positions(t, ctx.rank, 0, ctx.shape(op.result)[0], ctx.device)
        return (start + step * positions).to(dtype)

    return Kernel(fresh, lambda out, start, step: copy_into(out, fresh(start, step)))


def _triu(op: fusion.TriuOp, ctx: OpContext) -> Kernel:
    t, diagonal = tensor_type(op.result), op.diagonal.value.data
    rank = len(t.value_axes())

    def fresh(x: torch.Tensor) -> torch.Tensor:
        rows, _ = global_positions(t, ctx.rank, rank - 2, x.shape[-2], x.device)
        columns, _ = global_positions(t, ctx.rank, rank - 1, x.shape[-1], x.device)
        upper = columns.unsqueeze(0) - rows.unsqueeze(1) >= diagonal
        return torch.where(upper, x, torch.zeros((), dtype=x.dtype, device=x.device))

    return Kernel(fresh, lambda out, x: copy_into(out, fresh(x)))


def _mean(op: fusion.MeanOp, ctx: OpContext) -> Kernel:
    dims = tuple(op.reduced_axes())
    return Kernel(lambda x: torch.mean(x, dims), lambda out, x: torch.mean(x, dims, out=out))


def _var(op: fusion.VarOp, ctx: OpContext) -> Kernel:
    dims, correction = tuple(op.reduced_axes()), op.correction.value.data
    return Kernel(lambda x: torch.var(x, dims, correction=correction),
                  lambda out, x: torch.var(x, dims, correction=correction, out=out))


class _Runs:
    """Counts the runs of a random op drawing without a seed (each run draws new numbers)."""

    def __init__(self, stream: int):
        self.stream = stream
        self.count = 0

    def next_state(self) -> tuple[int, int]:
        self.count += 1
        return random_numbers.default_state(self.stream, self.count - 1)


def _uniform(op: fusion.UniformOp, ctx: OpContext) -> Kernel:
    t, dtype, shape = tensor_type(op.result), ctx.dtype(op.result), ctx.shape(op.result)
    runs = _Runs(op.stream.value.data)

    def fresh(low: Any, high: Any, seed: Any = None, offset: Any = None) -> torch.Tensor:
        seed, offset = runs.next_state() if seed is None else (seed, offset)
        numbers = random_numbers.uniform(seed, offset, _linear_positions(ctx, t, shape))
        return (low + (high - low) * numbers).to(dtype)

    return Kernel(fresh, lambda out, *args: copy_into(out, fresh(*args)))


def _rng_seed(op: fusion.RngSeedOp, ctx: OpContext) -> Kernel:
    runs = _Runs(op.stream.value.data)

    def fresh() -> torch.Tensor:
        return random_numbers.as_uint64(list(runs.next_state()), ctx.device)

    return Kernel(fresh, lambda out: copy_into(out, fresh()))


def _grouped_mm(op: fusion.GroupedMmOp, ctx: OpContext) -> Kernel:
    _refuse_integer_contraction_on_gpus(op, ctx)
    grouping, batch = op.grouping, op.batch()
    capability = torch.cuda.get_device_capability(ctx.device) if ctx.device.type == "cuda" else None

    def one(a: torch.Tensor, b: torch.Tensor, offsets: torch.Tensor) -> torch.Tensor:
        if _grouped_gemm_runs(a, b, capability):
            return torch._grouped_mm(a, b, offs=offsets.to(torch.int32))
        return _grouped_matmuls(a, b, offsets, grouping)

    def fresh(a: torch.Tensor, b: torch.Tensor, offsets: torch.Tensor) -> torch.Tensor:
        if not batch:
            return one(a, b, offsets)
        shape = torch.broadcast_shapes(a.shape[:batch], b.shape[:batch])
        a_, b_ = a.expand(*shape, *a.shape[batch:]), b.expand(*shape, *b.shape[batch:])
        results = [one(x, y, offsets) for x, y in zip(a_.reshape(-1, *a.shape[batch:]), b_.reshape(-1, *b.shape[batch:]))]
        return torch.stack(results).reshape(*shape, *results[0].shape)

    return Kernel(fresh, lambda out, a, b, offsets: copy_into(out, fresh(a, b, offsets)))


def _grouped_gemm_runs(a: torch.Tensor, b: torch.Tensor, capability: tuple[int, int] | None) -> bool:
    """Does torch's grouped GEMM take these operands, on a device of compute `capability`
    (None: CPU): dtypes it computes in there, without reading the offsets on the host
    while a CUDA graph is captured, 16-byte aligned data, and matrices whose rows (or
    columns) are dense with a leading stride of a multiple of 16 bytes (its own check)?"""
    capturing = capability is not None and torch.cuda.is_current_stream_capturing()
    return grouped_gemm_kernel_takes({a.dtype, b.dtype}, capability, capturing) and all(
        x.data_ptr() % 16 == 0 and _aligned_matrices(x) for x in (a, b))


def grouped_gemm_kernel_takes(dtypes: set[torch.dtype], capability: tuple[int, int] | None,
                              capturing: bool = False) -> bool:
    """torch's grouped GEMM takes half, bf16 and float32. While a CUDA graph is captured,
    only its own kernel will do, which it has for bf16 on compute capability 9 or 10:
    elsewhere it copies the offsets to the host and loops over the groups, which a capture
    refuses (found by the GPU profile); hostir's per-group matmuls read them on the device,
    at G times the work, so eager runs keep torch's loop."""
    if capturing:
        return dtypes == {torch.bfloat16} and capability is not None and capability[0] in (9, 10)
    return dtypes <= {torch.float16, torch.bfloat16, torch.float32}


def _aligned_matrices(x: torch.Tensor) -> bool:
    size = x.element_size()
    (rows, columns), (row_stride, column_stride) = x.shape[-2:], x.stride()[-2:]
    dense = (column_stride == 1 and row_stride * size % 16 == 0 and row_stride >= max(columns, 1)) or (
        row_stride == 1 and column_stride * size % 16 == 0 and column_stride >= max(rows, 1))
    return dense and all(stride * size % 16 == 0 for stride in x.stride()[:-2])


def _grouped_matmuls(a: torch.Tensor, b: torch.Tensor, offsets: torch.Tensor, grouping: fusion.Grouping) -> torch.Tensor:
    """One matmul per group, where torch's grouped GEMM does not run (float64, odd strides).
    Each group's rows (columns, or K slice) are picked by a mask computed on the device, not
    by reading the offsets on the host: that would synchronize, and a CUDA graph cannot
    capture it. Rows past the last offset belong to no group and stay zero."""
    ends = offsets.to(torch.int64)
    starts = torch.cat([ends.new_zeros(1), ends[:-1]])
    zero = torch.zeros((), dtype=a.dtype, device=a.device)
    if grouping == fusion.Grouping.M:
        rows = _group_masks(starts, ends, a.shape[0]).unsqueeze(-1)
        return sum((torch.where(rows[g], a @ b[g], zero) for g in range(len(ends))), zero)
    if grouping == fusion.Grouping.N:
        columns = _group_masks(starts, ends, b.shape[-1]).unsqueeze(1)
        return sum((torch.where(columns[g], a[g] @ b, zero) for g in range(len(ends))), zero)
    depth = _group_masks(starts, ends, a.shape[-1])
    return torch.stack([torch.where(depth[g], a, zero) @ b for g in range(len(ends))])


def _group_masks(starts: torch.Tensor, ends: torch.Tensor, extent: int) -> torch.Tensor:
    """[G, extent]: True where position i lies in group g's [start, end)."""
    positions = torch.arange(extent, device=starts.device)
    return (positions >= starts.unsqueeze(-1)) & (positions < ends.unsqueeze(-1))


def _attention_positions(ctx: OpContext, query: SSAValue, q: torch.Tensor, keys: int) -> torch.Tensor:
    """The global positions of the attention weights [N.., H, L, S] of a rank's heads."""
    t = tensor_type(query)
    index = torch.zeros((), dtype=torch.int64, device=q.device)
    for axis, local_extent in enumerate(q.shape[:-2]):
        positions, extent = global_positions(t, ctx.rank, axis, local_extent, q.device)
        index = index.unsqueeze(-1) * extent + positions
    for extent in (q.shape[-2], keys):
        index = index.unsqueeze(-1) * extent + torch.arange(extent, device=q.device)
    return index.reshape(-1, *index.shape[-3:])


def _attention_of(op: fusion.AttentionOp) -> Attention:
    scale = None if op.scale is None else op.scale.value.data
    return Attention(op.dropout_p.value.data, bool(op.is_causal.value.data), scale)


def _dropout(op: fusion.AttentionOp, ctx: OpContext, attention: Attention, q: torch.Tensor, k: torch.Tensor,
             seed: torch.Tensor, offset: torch.Tensor) -> torch.Tensor | None:
    """The dropout mask of `op`, from its random state (None without dropout)."""
    if not attention.dropout_p:
        return None
    state = random_numbers.as_int64(seed[0]), random_numbers.as_int64(seed[1]) + random_numbers.as_int64(offset)
    return dropout_keep(attention, *state, _attention_positions(ctx, op.query(), q, k.shape[-2]))


def _sdpfa_fwd(op: fusion.SdpfaFwdOp, ctx: OpContext) -> Kernel:
    attention = _attention_of(op)
    logsumexp = op.result_kind.data == fusion.AttentionOutput.LOGSUMEXP

    def fresh(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, seed: torch.Tensor, offset: torch.Tensor) -> torch.Tensor:
        mask = _dropout(op, ctx, attention, q, k, seed, offset)
        out, lse = attention.forward(batched(q), batched(k), batched(v), mask)
        return lse.reshape(q.shape[:-1]) if logsumexp else out.reshape(*q.shape[:-1], v.shape[-1])

    return Kernel(fresh, lambda out, *args: copy_into(out, fresh(*args)))


def _sdpfa_bwd(op: fusion.SdpfaBwdOp, ctx: OpContext) -> Kernel:
    attention = _attention_of(op)
    which = list(fusion.AttentionGradient).index(op.gradient.data)

    def fresh(grad: torch.Tensor, q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, out: torch.Tensor,
              lse: torch.Tensor, seed: torch.Tensor, offset: torch.Tensor) -> torch.Tensor:
        mask = _dropout(op, ctx, attention, q, k, seed, offset)
        grads = attention.backward(batched(grad), batched(q), batched(k), batched(v), batched(out),
                                   lse.reshape(-1, *lse.shape[-2:]), mask)
        return grads[which].reshape((q, k, v)[which].shape)

    return Kernel(fresh, lambda out, *args: copy_into(out, fresh(*args)))


PARITY_KERNELS: dict[type[ComputeOp], KernelBuilder] = {
    fusion.CatOp: _cat,
    fusion.ExpandOp: _expand,
    fusion.WhereOp: _where,
    fusion.IotaOp: _iota,
    fusion.TriuOp: _triu,
    fusion.MeanOp: _mean,
    fusion.VarOp: _var,
    fusion.UniformOp: _uniform,
    fusion.RngSeedOp: _rng_seed,
    fusion.GroupedMmOp: _grouped_mm,
    fusion.SdpfaFwdOp: _sdpfa_fwd,
    fusion.SdpfaBwdOp: _sdpfa_bwd,
}


KERNELS: dict[type[ComputeOp], KernelBuilder] = {
    fusion.SetOp: _set,
    fusion.CastOp: _cast,
    fusion.PermuteOp: _permute,
    fusion.ReshapeOp: _reshape,
    fusion.BroadcastOp: _broadcast,
    fusion.SqueezeOp: _squeeze,
    fusion.ReduceOp: _reduce,
    fusion.MatmulOp: _matmul,
    fusion.LinearOp: _linear,
    fusion.SliceOp: _slice,
    fusion.SelectOp: _select,
    fusion.UNARY_OPS["relu"]: _relu,
    **{fusion.UNARY_OPS[name]: _unary(f) for name, f in _UNARY.items()},
    fusion.SiluOp: _silu,
    fusion.GeluOp: _gelu,
    **{fusion.BINARY_OPS[name]: _binary(f) for name, f in _BINARY.items()},
    **PARITY_KERNELS,
}


def build_kernel(op: ComputeOp, ctx: OpContext) -> Kernel:
    builder = KERNELS.get(type(op))
    if builder is None:
        raise UnsupportedOp("has no torch implementation in the runtime")
    return builder(op, ctx)
