"""The `fusion` dialect: the user's tensor program, with value semantics.

Every compute op takes an optional destination operand (`into %buf`). In a host
program the op then writes into that pre-allocated buffer or view and its result aliases
it; user-written fusions never use it. Each op's logical result axes are computed by an
`infer_axes` rule shared by the verifier and the Python frontend, so the two can never
disagree about shapes.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import ClassVar

from xdsl.dialects.builtin import (
    I64,
    BFloat16Type,
    Float16Type,
    Float32Type,
    Float64Type,
    DenseArrayBase,
    FunctionType,
    IndexType,
    IntegerAttr,
    IntegerType,
    StringAttr,
    SymbolNameConstraint,
    i1,
    i64,
)
from xdsl.dialects.utils import parse_func_op_like, print_func_op_like
from xdsl.dialects.utils.enum_attribute import EnumAttribute
from xdsl.ir import Attribute, Block, Dialect, Operation, Region, SpacedOpaqueSyntaxAttribute, SSAValue
from xdsl.irdl import (
    AttrSizedOperandSegments,
    IRDLOperation,
    VarConstraint,
    base,
    irdl_attr_definition,
    irdl_op_definition,
    lazy_traits_def,
    operand_def,
    opt_operand_def,
    prop_def,
    region_def,
    result_def,
    traits_def,
    var_operand_def,
)
from xdsl.parser import Parser
from xdsl.printer import Printer
from xdsl.traits import (
    CallableOpInterface,
    EffectInstance,
    HasParent,
    IsolatedFromAbove,
    IsTerminator,
    MemoryEffect,
    MemoryEffectKind,
    SymbolOpInterface,
)
from xdsl.utils.exceptions import VerifyException
from xdsl.utils.str_enum import StrEnum

from .tensor_type import DYNAMIC, Axis, IterKind, TensorType, tensor_type

# --------------------------------------------------------------------------- #
# Shape rules
# --------------------------------------------------------------------------- #

AxisShape = tuple[int, IterKind]
"""A logical axis without parallelization: what shape rules compute."""

SCALAR_TYPES = (Float16Type, BFloat16Type, Float32Type, Float64Type, IntegerType, IndexType)


def axis_shapes(axes: Sequence[Axis]) -> list[AxisShape]:
    return [(a.extent, a.kind) for a in axes]


def _check_axis(index: int, rank: int, what: str) -> None:
    if not -rank <= index < rank:
        raise VerifyException(f"{what} {index} is out of range for rank {rank}")


def _normalize(index: int, rank: int) -> int:
    return index + rank if index < 0 else index


def _broadcast_pair(a: Axis, b: Axis, where: str) -> AxisShape:
    if a.is_broadcast:
        return b.extent, (IterKind.BROADCAST if b.is_broadcast else IterKind.ITERATION)
    if b.is_broadcast or a.extent == b.extent:
        return a.extent, IterKind.ITERATION
    if DYNAMIC in (a.extent, b.extent):
        return max(a.extent, b.extent), IterKind.ITERATION
    raise VerifyException(f"{where}: extents {a.extent} and {b.extent} are not broadcast-compatible")


def broadcast_axes(operands: Sequence[Sequence[Axis]], where: str) -> list[AxisShape]:
    """Elementwise rule: equal ranks; each axis equal or a broadcast axis (extent 1)."""
    ranks = {len(o) for o in operands}
    if len(ranks) > 1:
        raise VerifyException(f"{where}: operands have different ranks {sorted(ranks)}")
    result: list[Axis] = list(operands[0])
    for other in operands[1:]:
        shapes = [_broadcast_pair(x, y, f"{where} axis {i}") for i, (x, y) in enumerate(zip(result, other))]
        result = [Axis(extent, kind) for extent, kind in shapes]
    return axis_shapes(result)


def _extents_match(a: int, b: int) -> bool:
    return a == b or DYNAMIC in (a, b)


# --------------------------------------------------------------------------- #
# Effects: a compute op writes memory only when it has a destination
# --------------------------------------------------------------------------- #

_WRITE = frozenset((EffectInstance(MemoryEffectKind.WRITE),))


class WritesDestination(MemoryEffect):
    """Pure without a destination; writes memory (so is never dead) with one."""

    @classmethod
    def get_effects(cls, op: Operation):
        assert isinstance(op, ComputeOp)
        return _WRITE if op.out is not None else frozenset()


# --------------------------------------------------------------------------- #
# Compute ops
# --------------------------------------------------------------------------- #


class ComputeOp(IRDLOperation):
    """Base of every compute op: one tensor result and an optional destination."""

    R: ClassVar = VarConstraint("R", base(TensorType))
    out = opt_operand_def(R)
    result = result_def(R)
    traits = traits_def(WritesDestination())

    def tensor_inputs(self) -> list[SSAValue]:
        # The destination is the last operand; compare positions, not values, since an
        # in-place op (`fusion.neg %x into %x`) has its input as destination too.
        inputs = self.operands[:-1] if self.out is not None else self.operands
        return [o for o in inputs if isinstance(o.type, TensorType)]

    def infer_axes(self) -> list[AxisShape]:
        raise NotImplementedError

    def axis_map(self, operand: SSAValue) -> dict[int, int]:
        """Logical axis of a tensor operand -> the result's logical axis it becomes.

        Axes that vanish (selected, squeezed) are absent. Reduction axes of the operand
        are not part of its value and never mapped; a broadcast axis maps to the result
        axis it is broadcast along. This is the "pairwise map" sharding analysis uses.
        """
        return dict(zip(tensor_type(operand).value_positions(), self.value_axis_targets(operand)))

    def value_axis_targets(self, operand: SSAValue) -> list[int]:
        """For each value axis of `operand`, in order, the result axis it maps to."""
        return list(range(len(tensor_type(operand).value_axes())))

    def verify_(self) -> None:
        result = self.result.type
        assert isinstance(result, TensorType)
        expected = self.infer_axes()
        got = axis_shapes(result.axes)
        if len(expected) != len(got) or not all(
            _extents_match(e[0], g[0]) and e[1] == g[1] for e, g in zip(expected, got)
        ):
            raise VerifyException(
                f"result axes {_show(got)} do not match the expected {_show(expected)}"
            )
        self.verify_element_type()

    def verify_element_type(self) -> None:
        """Default: the result keeps the element type of the (first) tensor input."""
        source = self.tensor_inputs()[0].type
        assert isinstance(source, TensorType) and isinstance(self.result.type, TensorType)
        if source.element_type != self.result.type.element_type:
            raise VerifyException(
                f"result element type {self.result.type.element_type} differs from the "
                f"input's {source.element_type}"
            )


def _show(shapes: Sequence[AxisShape]) -> str:
    def one(extent: int, kind: IterKind) -> str:
        prefix = "" if kind == IterKind.ITERATION else str(kind)
        return prefix + ("?" if extent == DYNAMIC else str(extent))

    return "[" + ", ".join(one(e, k) for e, k in shapes) + "]"


UNARY_FORMAT = "$input (`into` $out^)? attr-dict `:` type($input) `->` type($result)"


class UnaryComputeOp(ComputeOp):
    """An op of one tensor input whose result has the input's axes."""

    input = operand_def(TensorType)
    assembly_format = UNARY_FORMAT

    def __init__(self, input: SSAValue, result_type: TensorType, out: SSAValue | None = None):
        super().__init__(operands=[input, out], result_types=[result_type])

    def infer_axes(self) -> list[AxisShape]:
        assert isinstance(self.input.type, TensorType)
        return axis_shapes(tensor_type(self.input).value_axes())


@irdl_op_definition
class SetOp(UnaryComputeOp):
    """Copy; with a different sharding or mesh on the result, a resharding (communication)."""

    name = "fusion.set"


@irdl_op_definition
class CastOp(UnaryComputeOp):
    name = "fusion.cast"

    def verify_element_type(self) -> None:
        pass


def _unary(op_name: str, doc: str) -> type[UnaryComputeOp]:
    cls = type(
        op_name.split(".")[1].capitalize() + "Op",
        (UnaryComputeOp,),
        {"name": op_name, "__doc__": doc, "__module__": __name__},
    )
    return irdl_op_definition(cls)


UNARY_FUNCTIONS = ("neg", "abs", "relu", "exp", "log", "sqrt", "rsqrt", "sin", "cos", "tanh", "sigmoid", "reciprocal")
UNARY_OPS: dict[str, type[UnaryComputeOp]] = {
    f: _unary(f"fusion.{f}", f"Elementwise {f}.") for f in UNARY_FUNCTIONS
}


class BinaryComputeOp(ComputeOp):
    """Elementwise op of two operands (tensors with broadcast axes, or scalars)."""

    lhs = operand_def()
    rhs = operand_def()
    assembly_format = (
        "$lhs `,` $rhs (`into` $out^)? attr-dict `:` type($lhs) `,` type($rhs) `->` type($result)"
    )
    RETURNS_PREDICATE: ClassVar[bool] = False

    def __init__(self, lhs: SSAValue, rhs: SSAValue, result_type: TensorType, out: SSAValue | None = None):
        super().__init__(operands=[lhs, rhs, out], result_types=[result_type])

    def infer_axes(self) -> list[AxisShape]:
        tensors = self.tensor_inputs()
        for operand in (self.lhs, self.rhs):
            if not isinstance(operand.type, (TensorType, *SCALAR_TYPES)):
                raise VerifyException(f"operand of type {operand.type} is neither a tensor nor a scalar")
        if not tensors:
            raise VerifyException("at least one operand must be a tensor")
        return broadcast_axes([tensor_type(t).value_axes() for t in tensors], self.name)

    def verify_element_type(self) -> None:
        element_types = {t.type.element_type for t in self.tensor_inputs()}  # type: ignore[attr-defined]
        if len(element_types) > 1:
            raise VerifyException(f"tensor operands have different element types {sorted(map(str, element_types))}; cast one first")
        expected = i1 if self.RETURNS_PREDICATE else element_types.pop()
        assert isinstance(self.result.type, TensorType)
        if self.result.type.element_type != expected:
            raise VerifyException(f"result element type must be {expected}, got {self.result.type.element_type}")


def _binary(function: str, predicate: bool) -> type[BinaryComputeOp]:
    cls = type(
        "".join(w.capitalize() for w in function.split("_")) + "Op",
        (BinaryComputeOp,),
        {
            "name": f"fusion.{function}",
            "RETURNS_PREDICATE": predicate,
            "__annotations__": {"RETURNS_PREDICATE": ClassVar[bool]},
            "__doc__": f"Elementwise {function}.",
            "__module__": __name__,
        },
    )
    return irdl_op_definition(cls)


ARITHMETIC_FUNCTIONS = ("add", "sub", "mul", "div", "maximum", "minimum", "pow")
COMPARISON_FUNCTIONS = ("eq", "ne", "lt", "le", "gt", "ge")
BINARY_OPS: dict[str, type[BinaryComputeOp]] = {
    **{f: _binary(f, False) for f in ARITHMETIC_FUNCTIONS},
    **{f: _binary(f, True) for f in COMPARISON_FUNCTIONS},
}
AddOp = BINARY_OPS["add"]


@irdl_op_definition
class PermuteOp(ComputeOp):
    """%r = fusion.permute %x dims [1, 0] : T -> R   (result axis i = input axis dims[i])"""

    name = "fusion.permute"
    input = operand_def(TensorType)
    dims = prop_def(DenseArrayBase[I64])
    assembly_format = "$input `dims` $dims (`into` $out^)? attr-dict `:` type($input) `->` type($result)"

    def __init__(self, input: SSAValue, dims: Sequence[int], result_type: TensorType, out: SSAValue | None = None):
        super().__init__(
            operands=[input, out], result_types=[result_type],
            properties={"dims": DenseArrayBase.from_list(i64, dims)},
        )

    def infer_axes(self) -> list[AxisShape]:
        axes = tensor_type(self.input).value_axes()
        dims = [_normalize(d, len(axes)) for d in self.dims.get_values()]
        if sorted(dims) != list(range(len(axes))):
            raise VerifyException(f"dims {list(self.dims.get_values())} is not a permutation of {len(axes)} axes")
        return [(axes[d].extent, axes[d].kind) for d in dims]

    def value_axis_targets(self, operand: SSAValue) -> list[int]:
        rank = len(self.dims)
        dims = [_normalize(d, rank) for d in self.dims.get_values()]
        return [dims.index(k) for k in range(rank)]


@irdl_op_definition
class ReshapeOp(UnaryComputeOp):
    """%r = fusion.reshape %x : T -> R   (same number of elements)"""

    name = "fusion.reshape"

    def infer_axes(self) -> list[AxisShape]:
        result = self.result.type
        assert isinstance(result, TensorType) and isinstance(self.input.type, TensorType)
        source = [a.extent for a in tensor_type(self.input).value_axes()]
        target = [a.extent for a in result.axes]
        if any(a.is_reduction for a in result.axes):
            raise VerifyException("a reshape result has no reduction axes")
        if DYNAMIC not in source + target and _product(source) != _product(target):
            raise VerifyException(f"cannot reshape {source} ({_product(source)} elements) to {target} ({_product(target)} elements)")
        return axis_shapes(result.axes)

    def value_axis_targets(self, operand: SSAValue) -> list[int]:
        """Group axes whose products match; each input axis of a group maps to the
        group's outermost output axis (as nvFuser attributes a split to its outer ID)."""
        source = [a.extent for a in tensor_type(self.input).value_axes()]
        target = [a.extent for a in self.result.type.axes]  # type: ignore[attr-defined]
        targets: list[int] = []
        i = j = 0
        while i < len(source) and j < len(target):
            group_start, src_prod, dst_prod, first = j, source[i], target[j], i
            i, j = i + 1, j + 1
            while src_prod != dst_prod and DYNAMIC not in (src_prod, dst_prod):
                if src_prod < dst_prod and i < len(source):
                    src_prod *= source[i]
                    i += 1
                elif j < len(target):
                    dst_prod *= target[j]
                    j += 1
                else:
                    break
            targets.extend([group_start] * (i - first))
        return targets + [len(target) - 1] * (len(source) - len(targets))


def _product(values: Sequence[int]) -> int:
    total = 1
    for v in values:
        total *= v
    return total


@irdl_op_definition
class BroadcastOp(ComputeOp):
    """%r = fusion.broadcast %x dims [0] : T -> R   (dims: result positions of new axes)"""

    name = "fusion.broadcast"
    input = operand_def(TensorType)
    dims = prop_def(DenseArrayBase[I64])
    assembly_format = "$input `dims` $dims (`into` $out^)? attr-dict `:` type($input) `->` type($result)"

    def __init__(self, input: SSAValue, dims: Sequence[int], result_type: TensorType, out: SSAValue | None = None):
        super().__init__(
            operands=[input, out], result_types=[result_type],
            properties={"dims": DenseArrayBase.from_list(i64, dims)},
        )

    def infer_axes(self) -> list[AxisShape]:
        axes = tensor_type(self.input).value_axes()
        rank = len(axes) + len(self.dims)
        new = set()
        for d in self.dims.get_values():
            _check_axis(d, rank, "broadcast dim")
            new.add(_normalize(d, rank))
        if len(new) != len(self.dims):
            raise VerifyException(f"broadcast dims {list(self.dims.get_values())} repeat an axis")
        inputs = iter(axes)
        return [(1, IterKind.BROADCAST) if i in new else (lambda a: (a.extent, a.kind))(next(inputs)) for i in range(rank)]

    def value_axis_targets(self, operand: SSAValue) -> list[int]:
        rank = len(self.result.type.axes)  # type: ignore[attr-defined]
        new = {_normalize(d, rank) for d in self.dims.get_values()}
        return [i for i in range(rank) if i not in new]


@irdl_op_definition
class SqueezeOp(ComputeOp):
    """%r = fusion.squeeze %x dims [0] : T -> R   (dims: input axes of extent 1 to drop)"""

    name = "fusion.squeeze"
    input = operand_def(TensorType)
    dims = prop_def(DenseArrayBase[I64])
    assembly_format = "$input `dims` $dims (`into` $out^)? attr-dict `:` type($input) `->` type($result)"

    def __init__(self, input: SSAValue, dims: Sequence[int], result_type: TensorType, out: SSAValue | None = None):
        super().__init__(
            operands=[input, out], result_types=[result_type],
            properties={"dims": DenseArrayBase.from_list(i64, dims)},
        )

    def infer_axes(self) -> list[AxisShape]:
        axes = tensor_type(self.input).value_axes()
        dropped = set()
        for d in self.dims.get_values():
            _check_axis(d, len(axes), "squeeze dim")
            d = _normalize(d, len(axes))
            if axes[d].extent != 1:
                raise VerifyException(f"cannot squeeze axis {d} of extent {axes[d].extent}; only extent-1 axes")
            dropped.add(d)
        return [(a.extent, a.kind) for i, a in enumerate(axes) if i not in dropped]

    def value_axis_targets(self, operand: SSAValue) -> list[int]:
        rank = len(tensor_type(self.input).value_axes())
        dropped = {_normalize(d, rank) for d in self.dims.get_values()}
        kept = [k for k in range(rank) if k not in dropped]
        return [kept.index(k) if k in kept else -1 for k in range(rank)]

    def axis_map(self, operand: SSAValue) -> dict[int, int]:
        return {k: v for k, v in super().axis_map(operand).items() if v >= 0}


class ReduceKind(StrEnum):
    SUM = "sum"
    PROD = "prod"
    MAX = "max"
    MIN = "min"


@irdl_attr_definition
class ReduceKindAttr(EnumAttribute[ReduceKind], SpacedOpaqueSyntaxAttribute):
    name = "fusion.reduce_kind"


@irdl_op_definition
class ReduceOp(ComputeOp):
    """%r = fusion.reduce sum %x dims [1] : T<[4, 8]> -> R<[4, r8]>

    The reduced axes stay in the result's logical domain, marked as reduction axes
    (as nvFuser does); consumers do not see them.
    """

    name = "fusion.reduce"
    kind = prop_def(ReduceKindAttr)
    input = operand_def(TensorType)
    dims = prop_def(DenseArrayBase[I64])
    assembly_format = "$kind $input `dims` $dims (`into` $out^)? attr-dict `:` type($input) `->` type($result)"

    def __init__(self, kind: ReduceKind, input: SSAValue, dims: Sequence[int], result_type: TensorType, out: SSAValue | None = None):
        super().__init__(
            operands=[input, out], result_types=[result_type],
            properties={"kind": ReduceKindAttr(kind), "dims": DenseArrayBase.from_list(i64, dims)},
        )

    def reduced_axes(self) -> list[int]:
        rank = len(tensor_type(self.input).value_axes())
        return sorted({_normalize(d, rank) for d in self.dims.get_values()})

    def infer_axes(self) -> list[AxisShape]:
        axes = tensor_type(self.input).value_axes()
        if not len(self.dims):
            raise VerifyException("reduce needs at least one axis in dims")
        for d in self.dims.get_values():
            _check_axis(d, len(axes), "reduction axis")
        if len(self.reduced_axes()) != len(self.dims):
            raise VerifyException(f"reduction dims {list(self.dims.get_values())} repeat an axis")
        reduced = set(self.reduced_axes())
        return [(a.extent, IterKind.REDUCTION if i in reduced else a.kind) for i, a in enumerate(axes)]


@irdl_op_definition
class MatmulOp(ComputeOp):
    """%c = fusion.matmul %a, %b : A<[..., M, K]>, B<[..., K, N]> -> C<[..., M, N, rK]>

    Batch axes broadcast as in torch.matmul; B may also be a plain [K, N] matrix. The
    result ends with the contracted axis as a reduction axis (nvFuser's MatmulOp). A 1-D
    operand follows torch.matmul: A<[K]> gives no M axis, B<[K]> no N axis (a stream loop
    slices a matrix down to a vector).
    """

    name = "fusion.matmul"
    a = operand_def(TensorType)
    b = operand_def(TensorType)
    assembly_format = "$a `,` $b (`into` $out^)? attr-dict `:` type($a) `,` type($b) `->` type($result)"

    def __init__(self, a: SSAValue, b: SSAValue, result_type: TensorType, out: SSAValue | None = None):
        super().__init__(operands=[a, b, out], result_types=[result_type])

    def infer_axes(self) -> list[AxisShape]:
        a, b = tensor_type(self.a).value_axes(), tensor_type(self.b).value_axes()
        if not a or not b:
            raise VerifyException(f"matmul operands must have rank >= 1, got {len(a)} and {len(b)}")
        k_a, k_b = a[-1], b[-2 if len(b) >= 2 else 0]
        if not _extents_match(k_a.extent, k_b.extent):
            raise VerifyException(f"inner dimensions do not match: a has K={k_a.extent}, b has K={k_b.extent}")
        # torch.matmul: batch axes align from the right; the longer batch's extra leading
        # axes pass through (nvFuser's matmul_AR multiplies [S, D, M, K] by [D, K, N]).
        a_batch, b_batch = a[:-2], b[:-2]
        shared = min(len(a_batch), len(b_batch))
        longer = a_batch if len(a_batch) >= len(b_batch) else b_batch
        batch = axis_shapes(longer[: len(longer) - shared])
        if shared:
            batch += broadcast_axes([a_batch[len(a_batch) - shared :], b_batch[len(b_batch) - shared :]], "matmul batch")
        m = [(a[-2].extent, IterKind.ITERATION)] if len(a) >= 2 else []
        n = [(b[-1].extent, IterKind.ITERATION)] if len(b) >= 2 else []
        return batch + m + n + [(k_a.extent, IterKind.REDUCTION)]

    def value_axis_targets(self, operand: SSAValue) -> list[int]:
        a_rank, b_rank = len(tensor_type(self.a).value_axes()), len(tensor_type(self.b).value_axes())
        k = len(self.result.type.axes) - 1  # type: ignore[attr-defined]
        n = k - 1 if b_rank >= 2 else k
        m = n - 1 if a_rank >= 2 else n
        if operand is self.a:
            return [k] if a_rank == 1 else list(range(m - (a_rank - 2), m)) + [m, k]
        return [k] if b_rank == 1 else list(range(m - (b_rank - 2), m)) + [k, n]

    def verify_element_type(self) -> None:
        if self.a.type.element_type != self.b.type.element_type:  # type: ignore[attr-defined]
            raise VerifyException("matmul operands have different element types")
        super().verify_element_type()


@irdl_op_definition
class LinearOp(ComputeOp):
    """%y = fusion.linear %x, %w (bias %b)? : X<[..., K]>, W<[N, K]>(, B<[N]>)? -> Y<[..., N, rK]>"""

    name = "fusion.linear"
    input = operand_def(TensorType)
    weight = operand_def(TensorType)
    bias = opt_operand_def(TensorType)
    irdl_options = (AttrSizedOperandSegments(as_property=True),)
    assembly_format = (
        "$input `,` $weight (`bias` $bias^)? (`into` $out^)? attr-dict `:` "
        "type($input) `,` type($weight) (`,` type($bias)^)? `->` type($result)"
    )

    def __init__(self, input: SSAValue, weight: SSAValue, bias: SSAValue | None, result_type: TensorType, out: SSAValue | None = None):
        super().__init__(operands=[input, weight, bias, out], result_types=[result_type])

    def infer_axes(self) -> list[AxisShape]:
        x, w = tensor_type(self.input).value_axes(), tensor_type(self.weight).value_axes()
        if len(x) < 1 or len(w) != 2:
            raise VerifyException(f"linear needs an input of rank >= 1 and a [N, K] weight, got ranks {len(x)} and {len(w)}")
        if not _extents_match(x[-1].extent, w[1].extent):
            raise VerifyException(f"inner dimensions do not match: input has K={x[-1].extent}, weight has K={w[1].extent}")
        if self.bias is not None:
            bias = tensor_type(self.bias).value_axes()
            if len(bias) != 1 or not _extents_match(bias[0].extent, w[0].extent):
                raise VerifyException(f"bias must have shape [{w[0].extent}] (N), got {[a.extent for a in bias]}")
        return axis_shapes(x[:-1]) + [(w[0].extent, IterKind.ITERATION), (x[-1].extent, IterKind.REDUCTION)]

    def value_axis_targets(self, operand: SSAValue) -> list[int]:
        rank = len(self.result.type.axes)  # type: ignore[attr-defined]
        n, k = rank - 2, rank - 1
        if operand is self.input:
            return list(range(n)) + [k]
        if operand is self.weight:
            return [n, k]
        return [n]


@irdl_op_definition
class SliceOp(ComputeOp):
    """%r = fusion.slice %x starts [0, 2] stops [4, 8] steps [1, 2] : T -> R"""

    name = "fusion.slice"
    input = operand_def(TensorType)
    starts = prop_def(DenseArrayBase[I64])
    stops = prop_def(DenseArrayBase[I64])
    steps = prop_def(DenseArrayBase[I64])
    assembly_format = (
        "$input `starts` $starts `stops` $stops `steps` $steps (`into` $out^)? attr-dict "
        "`:` type($input) `->` type($result)"
    )

    def __init__(self, input: SSAValue, starts: Sequence[int], stops: Sequence[int], steps: Sequence[int], result_type: TensorType, out: SSAValue | None = None):
        super().__init__(
            operands=[input, out], result_types=[result_type],
            properties={
                "starts": DenseArrayBase.from_list(i64, starts),
                "stops": DenseArrayBase.from_list(i64, stops),
                "steps": DenseArrayBase.from_list(i64, steps),
            },
        )

    def infer_axes(self) -> list[AxisShape]:
        axes = tensor_type(self.input).value_axes()
        starts, stops, steps = (x.get_values() for x in (self.starts, self.stops, self.steps))
        if not len(starts) == len(stops) == len(steps) == len(axes):
            raise VerifyException(f"starts, stops and steps need one entry per axis ({len(axes)})")
        result = []
        for i, (axis, start, stop, step) in enumerate(zip(axes, starts, stops, steps)):
            if step < 1:
                raise VerifyException(f"axis {i}: step {step} must be positive")
            if not 0 <= start <= stop or (axis.extent != DYNAMIC and stop > axis.extent):
                raise VerifyException(f"axis {i}: slice [{start}, {stop}) is out of bounds for extent {axis.extent}")
            result.append((-(-(stop - start) // step), IterKind.ITERATION))
        return result


@irdl_op_definition
class SelectOp(ComputeOp):
    """%r = fusion.select %x[%i] dim 0 : T, index -> R   (drops axis `dim`)"""

    name = "fusion.select"
    input = operand_def(TensorType)
    index = operand_def(IndexType | IntegerType)
    dim = prop_def(IntegerAttr[I64])
    assembly_format = (
        "$input `[` $index `]` `dim` $dim (`into` $out^)? attr-dict `:` type($input) `,` "
        "type($index) `->` type($result)"
    )

    def __init__(self, input: SSAValue, index: SSAValue, dim: int, result_type: TensorType, out: SSAValue | None = None):
        super().__init__(
            operands=[input, index, out], result_types=[result_type],
            properties={"dim": IntegerAttr(dim, 64)},
        )

    @property
    def axis(self) -> int:
        rank = len(tensor_type(self.input).value_axes())
        return _normalize(self.dim.value.data, rank)

    def infer_axes(self) -> list[AxisShape]:
        axes = tensor_type(self.input).value_axes()
        _check_axis(self.dim.value.data, len(axes), "select dim")
        return [(a.extent, a.kind) for i, a in enumerate(axes) if i != self.axis]

    def axis_map(self, operand: SSAValue) -> dict[int, int]:
        if operand is not self.input:
            return {}
        positions = tensor_type(self.input).value_positions()
        kept = [p for k, p in enumerate(positions) if k != self.axis]
        return {p: i for i, p in enumerate(kept)}


# --------------------------------------------------------------------------- #
# Functions
# --------------------------------------------------------------------------- #


class _FuncCallable(CallableOpInterface):
    @classmethod
    def get_callable_region(cls, op: Operation) -> Region:
        return op.body  # type: ignore[attr-defined]

    @classmethod
    def get_argument_types(cls, op: Operation) -> tuple[Attribute, ...]:
        return op.function_type.inputs.data  # type: ignore[attr-defined]

    @classmethod
    def get_result_types(cls, op: Operation) -> tuple[Attribute, ...]:
        return op.function_type.outputs.data  # type: ignore[attr-defined]


class FunctionLikeOp(IRDLOperation):
    """A symbol with one block whose arguments are the inputs, ended by a return op."""

    body = region_def("single_block")
    sym_name = prop_def(SymbolNameConstraint())
    function_type = prop_def(FunctionType)
    RETURN_OP: ClassVar[type[IRDLOperation]]

    def __init__(self, name: str, inputs: Sequence[Attribute], outputs: Sequence[Attribute], body: Region | None = None):
        function_type = FunctionType.from_lists(inputs, outputs)
        if body is None:
            body = Region(Block(arg_types=inputs))
        super().__init__(
            properties={"sym_name": StringAttr(name), "function_type": function_type},
            regions=[body],
        )

    @property
    def args(self):
        return self.body.block.args

    def verify_(self) -> None:
        block = self.body.block
        if tuple(block.arg_types) != self.function_type.inputs.data:
            raise VerifyException("entry block arguments do not match the function's input types")
        last = block.last_op
        if not isinstance(last, self.RETURN_OP):
            raise VerifyException(f"body must end with {self.RETURN_OP.name}")
        returned = tuple(v.type for v in last.operands)
        if returned != self.function_type.outputs.data:
            raise VerifyException(
                f"returned types ({', '.join(map(str, returned))}) do not match the "
                f"declared results ({', '.join(map(str, self.function_type.outputs.data))})"
            )

    @classmethod
    def parse(cls, parser: Parser):
        name, inputs, outputs, region, extra, _, _ = parse_func_op_like(
            parser, reserved_attr_names=("sym_name", "function_type")
        )
        op = cls(name, inputs, outputs, region)
        if extra is not None:
            op.attributes |= extra.data
        return op

    def print(self, printer: Printer) -> None:
        print_func_op_like(
            printer, self.sym_name, self.function_type, self.body, self.attributes,
            reserved_attr_names=("sym_name", "function_type"),
        )


@irdl_op_definition
class ReturnOp(IRDLOperation):
    name = "fusion.return"
    values = var_operand_def(TensorType)
    traits = lazy_traits_def(lambda: (IsTerminator(), HasParent(FuncOp)))
    assembly_format = "($values^ `:` type($values))? attr-dict"

    def __init__(self, *values: SSAValue):
        super().__init__(operands=[values])


@irdl_op_definition
class FuncOp(FunctionLikeOp):
    """fusion.func @f(%a: T) -> R { ... fusion.return %r : R }"""

    name = "fusion.func"
    traits = traits_def(SymbolOpInterface(), IsolatedFromAbove(), _FuncCallable())
    RETURN_OP: ClassVar[type[IRDLOperation]] = ReturnOp


COMPUTE_OPS: list[type[ComputeOp]] = [
    SetOp, CastOp, PermuteOp, ReshapeOp, BroadcastOp, SqueezeOp, ReduceOp,
    MatmulOp, LinearOp, SliceOp, SelectOp,
    *UNARY_OPS.values(), *BINARY_OPS.values(),
]

Fusion = Dialect("fusion", [FuncOp, ReturnOp, *COMPUTE_OPS], [TensorType, ReduceKindAttr])
