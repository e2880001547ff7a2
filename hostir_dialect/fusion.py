"""The `fusion` dialect: the user's tensor program, with value semantics.

Every compute op takes an optional destination operand (`into %buf`). In a host
program the op then writes into that pre-allocated buffer or view and its result aliases
it; user-written fusions never use it. Each op's logical result axes are computed by an
`infer_axes` rule shared by the verifier and the Python frontend, so the two can never
disagree about shapes.

What passes need to know about an op is on the op (MLIR's interface style), so adding
an op means touching the op only:
- `StandaloneHostOp` (trait): the host program runs it directly instead of inside a
  kernel unit (nvFuser's `isLowerableAsStandaloneHostOp`, csrc/host_ir/lower.cpp).
- `StreamSliceable` (interface): `stream_chunk(...)` gives the op computing one stream
  chunk; ops that cannot be computed chunk by chunk do not implement it.
- `ComputeOp.sharding_reference_operands()`: the inputs a sharding propagates from.
- `ComputeOp.axis_map(operand)`: which result axis each operand axis becomes.
"""

from __future__ import annotations

import abc
import math
from collections.abc import Callable, Mapping, Sequence
from typing import ClassVar, Generic, TypeVar

from xdsl.dialects import arith
from xdsl.dialects.builtin import (
    I64,
    BFloat16Type,
    DenseArrayBase,
    Float16Type,
    Float32Type,
    Float64Type,
    IndexType,
    IntegerAttr,
    IntegerType,
    i1,
    i64,
)
from xdsl.dialects.utils.enum_attribute import EnumAttribute
from xdsl.ir import Attribute, Dialect, Operation, SpacedOpaqueSyntaxAttribute, SSAValue
from xdsl.irdl import (
    AttrSizedOperandSegments,
    IRDLOperation,
    VarConstraint,
    base,
    irdl_attr_definition,
    operand_def,
    opt_operand_def,
    opt_prop_def,
    prop_def,
    result_def,
    traits_def,
)
from xdsl.traits import EffectInstance, HasParent, IsTerminator, MemoryEffect, MemoryEffectKind, OpTrait
from xdsl.utils.exceptions import VerifyException
from xdsl.utils.str_enum import StrEnum

from . import cache_check
from .attributes import i64_attr
from .building import init_flat, init_segmented
from .definition import op_definition
from .functions import FunctionLikeOp, ReturnLikeOp
from .tensor_type import DYNAMIC, Axis, IterKind, TensorType, tensor_type

# --------------------------------------------------------------------------- #
# Shape rules
# --------------------------------------------------------------------------- #

AxisShape = tuple[int, IterKind]
"""A logical axis without parallelization: what shape rules compute."""

SCALAR_TYPES = (Float16Type, BFloat16Type, Float32Type, Float64Type, IntegerType, IndexType)


def _scalar_kind(t: Attribute) -> int:
    """torch's promotion categories: bool < integer < floating point (a tensor's element
    type counts as a scalar type of its kind)."""
    if isinstance(t, TensorType):
        return -1
    if isinstance(t, IntegerType) and t.width.data == 1:
        return 0
    return 1 if isinstance(t, (IntegerType, IndexType)) else 2


def _in_fusion_func(op: Operation) -> bool:
    parent = op.parent_op()
    while parent is not None and not isinstance(parent, FuncOp):
        parent = parent.parent_op()
    return parent is not None


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


def _show(shapes: Sequence[AxisShape]) -> str:
    def one(extent: int, kind: IterKind) -> str:
        prefix = "" if kind == IterKind.ITERATION else str(kind)
        return prefix + ("?" if extent == DYNAMIC else str(extent))

    return "[" + ", ".join(one(e, k) for e, k in shapes) + "]"


def is_predicate(element_type: Attribute) -> bool:
    """i1, the element type of comparison results."""
    return isinstance(element_type, IntegerType) and element_type.width.data == 1


def _refuse_predicates(op: ComputeOp) -> None:
    """Arithmetic is not defined on predicates (torch refuses it or changes the type)."""
    if any(is_predicate(tensor_type(t).element_type) for t in op.tensor_inputs()):
        raise VerifyException(f"{op.name} computes on numbers, not predicates (i1); cast the predicate first")


def by_parallelism(values: Sequence[SSAValue]) -> list[SSAValue]:
    """Tensor values, most parallel first; ties broken by mesh rank, then by order."""

    def key(v: SSAValue) -> tuple[int, int]:
        t = tensor_type(v)
        return -t.parallel_count(), -(t.mesh.ndim if t.mesh else 0)

    return sorted(values, key=key)


class ReduceKind(StrEnum):
    """How a reduction combines values: fusion.reduce and the reducing collectives."""

    SUM = "sum"
    PROD = "prod"
    MAX = "max"
    MIN = "min"


@irdl_attr_definition
class ReduceKindAttr(EnumAttribute[ReduceKind], SpacedOpaqueSyntaxAttribute):
    """`sum`, `prod`, `max` or `min` in an op's text."""

    name = "fusion.reduce_kind"


class GeluApproximation(StrEnum):
    """How fusion.gelu computes the normal CDF: exactly (erf), or with torch's and
    nvFuser's tanh approximation."""

    NONE = "none"
    TANH = "tanh"


@irdl_attr_definition
class GeluApproximationAttr(EnumAttribute[GeluApproximation], SpacedOpaqueSyntaxAttribute):
    """`none` or `tanh` in fusion.gelu's text."""

    name = "fusion.gelu_approximation"


class Epilogue(StrEnum):
    """An activation a matmul or linear applies to its result before writing it (GEMM
    libraries' epilogues: cuBLASLt's GELU and RELU), so that no separate kernel reads and
    writes the whole result again (`fuse-epilogues` folds the activation that follows)."""

    GELU_TANH = "gelu_tanh"
    RELU = "relu"


@irdl_attr_definition
class EpilogueAttr(EnumAttribute[Epilogue], SpacedOpaqueSyntaxAttribute):
    """`gelu_tanh` or `relu` after `epilogue` in a matmul's or linear's text."""

    name = "fusion.epilogue"


# --------------------------------------------------------------------------- #
# Op knowledge: effects, traits, interfaces
# --------------------------------------------------------------------------- #

_WRITE = frozenset((EffectInstance(MemoryEffectKind.WRITE),))


class WritesDestination(MemoryEffect):
    """Pure without a destination; writes memory (so is never dead) with one."""

    @classmethod
    def get_effects(cls, op: Operation):
        assert isinstance(op, ComputeOp)
        return _WRITE if op.out is not None else frozenset()


class StandaloneHostOp(OpTrait):
    """The host program runs this op directly (a library call such as a GEMM), never
    inside a kernel unit: nvFuser's `isLowerableAsStandaloneHostOp`. An op that moves
    data between devices is standalone too, whatever its class (a sharding query)."""


class StreamSliceable(Operation, abc.ABC):
    """An op that stream-parallel-type can compute one stream chunk at a time: the same
    op on chunks of its operands (csrc/host_ir/pass/stream_parallel_type.cpp)."""

    def operand_chunk_stride(self, operand: SSAValue, axis: int) -> tuple[int, int]:
        """(start, step): result chunk `i` reads chunk `start + step * i` of `operand`
        along its logical axis `axis` (that is chunk `i` for all but a slice)."""
        return 0, 1

    def slices_along(self, axis: int) -> bool:
        """Are the chunks of the result along its logical axis `axis` this op applied to
        chunks of its operands (along the axes the axis map relates to it)?"""
        return True

    @abc.abstractmethod
    def stream_chunk(
        self, chunks: Mapping[SSAValue, SSAValue], removed: Mapping[SSAValue, int], result_type: TensorType,
        out: SSAValue | None = None,
    ) -> ComputeOp:
        """This op on one stream chunk, of type `result_type`, into `out` if given: each
        operand in `chunks` is replaced by its chunk, which lacks the operand's logical
        axis `removed[operand]`; the result lacks `removed[self.result]`. Axis attributes
        are renumbered accordingly. The result is not verified."""


def _chunk(chunks: Mapping[SSAValue, SSAValue], value: SSAValue) -> SSAValue:
    return chunks.get(value, value)


def _removed_position(source: SSAValue, removed: Mapping[SSAValue, int]) -> int:
    """The value position, in `source`, of the logical axis a chunk removes from it."""
    return tensor_type(source).value_position(removed[source])


def _drop(values: Sequence[int], position: int) -> list[int]:
    return [*values[:position], *values[position + 1 :]]


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

    def derived_axes(self, operand: SSAValue) -> set[int]:
        """Result axes made of `operand`'s data; any other result axis is new (broadcast).
        These are the axis map's targets but for a reshape, whose map only names the
        outermost axis of each group of split axes."""
        return set(self.axis_map(operand).values())

    def sharding_reference_operands(self) -> list[SSAValue]:
        """The inputs to propagate a sharding to the result from, best first
        (csrc/preseg_passes/propagate_shardings.cpp): the most parallel input first."""
        return by_parallelism(self.tensor_inputs())

    def verify_(self) -> None:
        if self.out is not None and _in_fusion_func(self):
            raise VerifyException("destination operands (`into`) are only allowed in a hir.program")
        _VERIFIED_SHAPES.answer(self, type(self).verify_shape)

    def verify_shape(self) -> None:
        """The checks that read only what `shape_of` the op holds: its result axes and
        element type against its operands'."""
        expected = self.infer_axes()
        got = axis_shapes(tensor_type(self.result).axes)
        if len(expected) != len(got) or not all(
            _extents_match(e[0], g[0]) and e[1] == g[1] for e, g in zip(expected, got)
        ):
            raise VerifyException(
                f"result axes {_show(got)} do not match the expected {_show(expected)}"
            )
        self.verify_element_type()

    def verify_element_type(self) -> None:
        """Default: the result keeps the element type of the (first) tensor input."""
        source = tensor_type(self.tensor_inputs()[0]).element_type
        result = tensor_type(self.result).element_type
        if source != result:
            raise VerifyException(f"result element type {result} differs from the input's {source}")


def shape_of(op: ComputeOp) -> tuple | None:
    """What a compute op's shape rules and sharding queries read when every operand is a
    tensor: the op's kind, properties and attributes, its operand types (axis maps read
    their types and positions), which operands are the same value, and its result type.
    None when an operand is not a tensor (an index, whose defining op a verifier or map
    may read)."""
    operands = tuple(op.operands)
    types = tuple(v.type for v in operands)
    if not all(isinstance(t, TensorType) for t in types):
        return None
    aliases = tuple(operands.index(v) for v in operands)
    return (type(op), tuple(op.properties.items()), tuple(op.attributes.items()), types, aliases, op.result.type)


_Answer = TypeVar("_Answer")


class ShapeTable(Generic[_Answer]):
    """The answers to a question about compute ops that `shape_of` an op determines, by
    shape: the passes and the verifier ask every op, several times, and a program repeats a
    few shapes of op many times over. An op without a shape is asked each time. A question
    must read nothing of the op that `shape_of` does not hold (its operands' producers,
    its place, a pass's state): `HOSTIR_CHECK_CACHES=1` checks it (`cache_check`)."""

    LIMIT = 4096
    """Shapes a table holds at most (a full table starts over)."""

    def __init__(self) -> None:
        self.answers: dict[tuple, _Answer] = {}

    def answer(self, op: ComputeOp, question: Callable[[ComputeOp], _Answer]) -> _Answer:
        key = shape_of(op)
        try:
            known = key is not None and key in self.answers
        except TypeError:  # an attribute that cannot be hashed
            key, known = None, False
        if key is None:
            return question(op)
        if not known:
            if len(self.answers) >= self.LIMIT:
                self.answers.clear()
            self.answers[key] = question(op)  # a question that raises leaves no answer
        elif cache_check.CHECKING:
            cache_check.recheck(self.answers[key], question, op)
        return self.answers[key]


_VERIFIED_SHAPES: ShapeTable[None] = ShapeTable()
"""The shapes of compute op whose `verify_shape` passed."""


class UnaryComputeOp(ComputeOp):
    """An op of one tensor input: `%r = fusion.<op> %x (into %d)? : T -> R`."""

    input = operand_def(TensorType)
    assembly_format = "$input (`into` $out^)? attr-dict `:` type($input) `->` type($result)"

    def __init__(self, input: SSAValue, result_type: TensorType, out: SSAValue | None = None):
        init_flat(self, [input, out], [result_type])

    def infer_axes(self) -> list[AxisShape]:
        return axis_shapes(tensor_type(self.input).value_axes())


class ElementwiseUnaryOp(UnaryComputeOp, StreamSliceable):
    """Result element i depends on input element i only (copies, casts, functions)."""

    def stream_chunk(
        self, chunks: Mapping[SSAValue, SSAValue], removed: Mapping[SSAValue, int], result_type: TensorType,
        out: SSAValue | None = None,
    ) -> ComputeOp:
        return type(self)(_chunk(chunks, self.input), result_type, out)


@op_definition
class SetOp(ElementwiseUnaryOp):
    """Copy; with a different sharding or mesh on the result, a resharding (communication).
    A set never permutes (fusion.permute does), so it is a standalone host op."""

    name = "fusion.set"
    traits = traits_def(StandaloneHostOp())


@op_definition
class CastOp(ElementwiseUnaryOp):
    """Elementwise conversion to the result's element type."""

    name = "fusion.cast"

    def verify_element_type(self) -> None:
        pass


class ArithmeticUnaryOp(ElementwiseUnaryOp):
    """An elementwise function of numbers, keeping their element type."""

    def verify_element_type(self) -> None:
        _refuse_predicates(self)
        super().verify_element_type()


class FloatingPointUnaryOp(ElementwiseUnaryOp):
    """An elementwise function torch computes in floating point only: an integer input
    would change the element type, so it must be cast first."""

    def verify_element_type(self) -> None:
        source = tensor_type(self.input).element_type
        if not isinstance(source, (Float16Type, BFloat16Type, Float32Type, Float64Type)):
            raise VerifyException(f"{self.name} takes a floating-point tensor, got {source}; cast it first")
        super().verify_element_type()


@op_definition
class NegOp(ArithmeticUnaryOp):
    """Elementwise neg."""

    name = "fusion.neg"


@op_definition
class AbsOp(ArithmeticUnaryOp):
    """Elementwise abs."""

    name = "fusion.abs"


@op_definition
class ReluOp(ArithmeticUnaryOp):
    """Elementwise relu."""

    name = "fusion.relu"


@op_definition
class ExpOp(FloatingPointUnaryOp):
    """Elementwise exp."""

    name = "fusion.exp"


@op_definition
class LogOp(FloatingPointUnaryOp):
    """Elementwise log."""

    name = "fusion.log"


@op_definition
class SqrtOp(FloatingPointUnaryOp):
    """Elementwise sqrt."""

    name = "fusion.sqrt"


@op_definition
class RsqrtOp(FloatingPointUnaryOp):
    """Elementwise rsqrt."""

    name = "fusion.rsqrt"


@op_definition
class SinOp(FloatingPointUnaryOp):
    """Elementwise sin."""

    name = "fusion.sin"


@op_definition
class CosOp(FloatingPointUnaryOp):
    """Elementwise cos."""

    name = "fusion.cos"


@op_definition
class TanhOp(FloatingPointUnaryOp):
    """Elementwise tanh."""

    name = "fusion.tanh"


@op_definition
class SigmoidOp(FloatingPointUnaryOp):
    """Elementwise sigmoid."""

    name = "fusion.sigmoid"


@op_definition
class ReciprocalOp(FloatingPointUnaryOp):
    """Elementwise reciprocal."""

    name = "fusion.reciprocal"


@op_definition
class SiluOp(FloatingPointUnaryOp):
    """Elementwise silu: x * sigmoid(x) (SwiGLU's activation)."""

    name = "fusion.silu"


@op_definition
class GeluOp(FloatingPointUnaryOp):
    """%r = fusion.gelu none|tanh %x : T -> R   -- elementwise gelu, x * Phi(x), with
    Phi exact (`none`) or tanh-approximated (`tanh`, the transformer MLP's), as torch's
    `gelu(x, approximate=...)`."""

    name = "fusion.gelu"
    approximate = prop_def(GeluApproximationAttr)
    assembly_format = "$approximate $input (`into` $out^)? attr-dict `:` type($input) `->` type($result)"

    def __init__(self, input: SSAValue, result_type: TensorType, out: SSAValue | None = None,
                 approximate: GeluApproximation = GeluApproximation.NONE):
        init_flat(self, [input, out], [result_type], {"approximate": GeluApproximationAttr(approximate)})

    def stream_chunk(
        self, chunks: Mapping[SSAValue, SSAValue], removed: Mapping[SSAValue, int], result_type: TensorType,
        out: SSAValue | None = None,
    ) -> ComputeOp:
        return GeluOp(_chunk(chunks, self.input), result_type, out, self.approximate.data)


def _by_function(ops: Sequence[type[ComputeOp]]) -> dict[str, type]:
    """`fusion.exp` -> ExpOp keyed "exp": the frontend's and the runtime's tables."""
    return {op.name.removeprefix("fusion."): op for op in ops}


UNARY_OPS: dict[str, type[ElementwiseUnaryOp]] = _by_function(
    [NegOp, AbsOp, ReluOp, ExpOp, LogOp, SqrtOp, RsqrtOp, SinOp, CosOp, TanhOp, SigmoidOp, ReciprocalOp, SiluOp]
)
"""The unary functions of one tensor and nothing else (fusion.gelu also takes its approximation)."""
UNARY_FUNCTIONS = tuple(UNARY_OPS)


class BinaryComputeOp(ComputeOp, StreamSliceable):
    """Elementwise op of two operands (tensors with broadcast axes, or scalars)."""

    lhs = operand_def()
    rhs = operand_def()
    traits = traits_def(StandaloneHostOp())
    assembly_format = (
        "$lhs `,` $rhs (`into` $out^)? attr-dict `:` type($lhs) `,` type($rhs) `->` type($result)"
    )

    def __init__(self, lhs: SSAValue, rhs: SSAValue, result_type: TensorType, out: SSAValue | None = None):
        init_flat(self, [lhs, rhs, out], [result_type])

    def infer_axes(self) -> list[AxisShape]:
        tensors = self.tensor_inputs()
        for operand in (self.lhs, self.rhs):
            if not isinstance(operand.type, (TensorType, *SCALAR_TYPES)):
                raise VerifyException(f"operand of type {operand.type} is neither a tensor nor a scalar")
        if not tensors:
            raise VerifyException("at least one operand must be a tensor")
        return broadcast_axes([tensor_type(t).value_axes() for t in tensors], self.name)

    COMPUTES_ON_PREDICATES: ClassVar[bool] = False
    """Comparisons compare predicates too; arithmetic does not compute on them."""

    def verify_element_type(self) -> None:
        element_types = {tensor_type(t).element_type for t in self.tensor_inputs()}
        if not self.COMPUTES_ON_PREDICATES:
            _refuse_predicates(self)
        if len(element_types) > 1:
            raise VerifyException(f"tensor operands have different element types {sorted(map(str, element_types))}; cast one first")
        element_type = element_types.pop()
        for operand in (self.lhs, self.rhs):
            if _scalar_kind(operand.type) > _scalar_kind(element_type):
                # torch would promote the result (an int tensor times 2.5 is a float tensor)
                raise VerifyException(f"scalar of type {operand.type} does not fit element type {element_type}; cast the tensor first")
        expected = self.result_element_type(element_type)
        got = tensor_type(self.result).element_type
        if got != expected:
            raise VerifyException(f"result element type must be {expected}, got {got}")

    @classmethod
    def result_element_type(cls, operand_element_type: Attribute) -> Attribute:
        """The result's element type for tensor operands of this element type."""
        return operand_element_type

    def stream_chunk(
        self, chunks: Mapping[SSAValue, SSAValue], removed: Mapping[SSAValue, int], result_type: TensorType,
        out: SSAValue | None = None,
    ) -> ComputeOp:
        return type(self)(_chunk(chunks, self.lhs), _chunk(chunks, self.rhs), result_type, out)


class ComparisonOp(BinaryComputeOp):
    """An elementwise comparison: its result is a tensor of i1 (a predicate)."""

    COMPUTES_ON_PREDICATES: ClassVar[bool] = True

    @classmethod
    def result_element_type(cls, operand_element_type: Attribute) -> Attribute:
        return i1


@op_definition
class AddOp(BinaryComputeOp):
    """Elementwise add."""

    name = "fusion.add"


@op_definition
class SubOp(BinaryComputeOp):
    """Elementwise sub."""

    name = "fusion.sub"


@op_definition
class MulOp(BinaryComputeOp):
    """Elementwise mul."""

    name = "fusion.mul"


@op_definition
class DivOp(BinaryComputeOp):
    """Elementwise div (truncating for integers)."""

    name = "fusion.div"


@op_definition
class MaximumOp(BinaryComputeOp):
    """Elementwise maximum."""

    name = "fusion.maximum"


@op_definition
class MinimumOp(BinaryComputeOp):
    """Elementwise minimum."""

    name = "fusion.minimum"


@op_definition
class PowOp(BinaryComputeOp):
    """Elementwise pow."""

    name = "fusion.pow"


@op_definition
class EqOp(ComparisonOp):
    """Elementwise ==."""

    name = "fusion.eq"


@op_definition
class NeOp(ComparisonOp):
    """Elementwise !=."""

    name = "fusion.ne"


@op_definition
class LtOp(ComparisonOp):
    """Elementwise <."""

    name = "fusion.lt"


@op_definition
class LeOp(ComparisonOp):
    """Elementwise <=."""

    name = "fusion.le"


@op_definition
class GtOp(ComparisonOp):
    """Elementwise >."""

    name = "fusion.gt"


@op_definition
class GeOp(ComparisonOp):
    """Elementwise >=."""

    name = "fusion.ge"


ARITHMETIC_OPS = _by_function([AddOp, SubOp, MulOp, DivOp, MaximumOp, MinimumOp, PowOp])
COMPARISON_OPS = _by_function([EqOp, NeOp, LtOp, LeOp, GtOp, GeOp])
ARITHMETIC_FUNCTIONS = tuple(ARITHMETIC_OPS)
COMPARISON_FUNCTIONS = tuple(COMPARISON_OPS)
BINARY_OPS: dict[str, type[BinaryComputeOp]] = {**ARITHMETIC_OPS, **COMPARISON_OPS}


class DimsComputeOp(ComputeOp):
    """An op of one tensor and a list of axes: `%r = fusion.<op> %x dims [..] : T -> R`."""

    input = operand_def(TensorType)
    dims = prop_def(DenseArrayBase[I64])
    assembly_format = "$input `dims` $dims (`into` $out^)? attr-dict `:` type($input) `->` type($result)"

    def __init__(self, input: SSAValue, dims: Sequence[int], result_type: TensorType, out: SSAValue | None = None):
        init_flat(self, [input, out], [result_type], {"dims": DenseArrayBase.from_list(i64, dims)})

    def normalized_dims(self, rank: int) -> list[int]:
        """`dims` with negative entries counted from `rank`."""
        return [_normalize(d, rank) for d in self.dims.get_values()]


@op_definition
class PermuteOp(DimsComputeOp, StreamSliceable):
    """%r = fusion.permute %x dims [1, 0] : T -> R   (result axis i = input axis dims[i])"""

    name = "fusion.permute"

    def infer_axes(self) -> list[AxisShape]:
        axes = tensor_type(self.input).value_axes()
        dims = self.normalized_dims(len(axes))
        if sorted(dims) != list(range(len(axes))):
            raise VerifyException(f"dims {list(self.dims.get_values())} is not a permutation of {len(axes)} axes")
        return [(axes[d].extent, axes[d].kind) for d in dims]

    def value_axis_targets(self, operand: SSAValue) -> list[int]:
        dims = self.normalized_dims(len(self.dims))
        return [dims.index(k) for k in range(len(dims))]

    def stream_chunk(
        self, chunks: Mapping[SSAValue, SSAValue], removed: Mapping[SSAValue, int], result_type: TensorType,
        out: SSAValue | None = None,
    ) -> ComputeOp:
        gone = _removed_position(self.input, removed)
        dims = [d - (d > gone) for d in self.normalized_dims(len(self.dims)) if d != gone]
        return PermuteOp(_chunk(chunks, self.input), dims, result_type, out)


def _static_groups(source: list[int], target: list[int]) -> tuple[list[tuple[list[int], list[int]]], int, int]:
    """The groups of `source` and `target` axes with equal products, matched from the
    start up to the first dynamic extent or an unmatched end, and how many axes of each
    they hold."""
    groups: list[tuple[list[int], list[int]]] = []
    i = j = 0
    while i < len(source) and j < len(target) and DYNAMIC not in (source[i], target[j]):
        end_i, end_j, src_prod, dst_prod = i + 1, j + 1, source[i], target[j]
        while src_prod != dst_prod:
            if src_prod < dst_prod and end_i < len(source) and source[end_i] != DYNAMIC:
                src_prod *= source[end_i]
                end_i += 1
            elif src_prod > dst_prod and end_j < len(target) and target[end_j] != DYNAMIC:
                dst_prod *= target[end_j]
                end_j += 1
            else:
                return groups, i, j
        groups.append((list(range(i, end_i)), list(range(j, end_j))))
        i, j = end_i, end_j
    return groups, i, j


def _from_end(positions: list[int], length: int) -> list[int]:
    """Positions counted from the end of a list of `length`, as positions from its start."""
    return sorted(length - 1 - p for p in positions)


@op_definition
class ReshapeOp(UnaryComputeOp, StreamSliceable):
    """%r = fusion.reshape %x : T -> R   (same number of elements)"""

    name = "fusion.reshape"

    def infer_axes(self) -> list[AxisShape]:
        result = tensor_type(self.result)
        source = [a.extent for a in tensor_type(self.input).value_axes()]
        target = [a.extent for a in result.axes]
        if any(a.is_reduction for a in result.axes):
            raise VerifyException("a reshape result has no reduction axes")
        if DYNAMIC not in source + target and math.prod(source) != math.prod(target):
            raise VerifyException(f"cannot reshape {source} ({math.prod(source)} elements) to {target} ({math.prod(target)} elements)")
        return axis_shapes(result.axes)

    def groups(self) -> list[tuple[list[int], list[int]]]:
        """(input value axes, result axes) of each group of axes whose products match,
        in order; trailing axes that no product matches join the last result axis. Groups
        are matched from both ends up to the first dynamic extent; what lies between is
        one group, since a dynamic extent's share of it is known only at run time."""
        source = [a.extent for a in tensor_type(self.input).value_axes()]
        target = [a.extent for a in tensor_type(self.result).axes]
        head, i, j = _static_groups(source, target)
        if i == len(source) or j == len(target):
            if i < len(source):
                head.append((list(range(i, len(source))), [len(target) - 1]))
            return head
        tail, end_i, end_j = _static_groups(source[i:][::-1], target[j:][::-1])
        tail = [(_from_end(s, len(source)), _from_end(t, len(target))) for s, t in reversed(tail)]
        middle = (list(range(i, len(source) - end_i)), list(range(j, len(target) - end_j)))
        if not middle[0] or not middle[1]:  # only size-1 axes on one side: join a neighbour
            neighbour = head.pop() if head else tail.pop(0)
            middle = (sorted(neighbour[0] + middle[0]), sorted(neighbour[1] + middle[1]))
        return [*head, middle, *tail]

    def value_axis_targets(self, operand: SSAValue) -> list[int]:
        """Each input axis maps to its group's outermost result axis (as nvFuser
        attributes a split to its outer ID)."""
        return [targets[0] for sources, targets in self.groups() for _ in sources]

    def derived_axes(self, operand: SSAValue) -> set[int]:
        return {t for _, targets in self.groups() for t in targets}

    def slices_along(self, axis: int) -> bool:
        """Only along an axis the reshape keeps as it is (a group of one axis each side)."""
        return any(targets == [axis] and len(sources) == 1 for sources, targets in self.groups())

    def stream_chunk(
        self, chunks: Mapping[SSAValue, SSAValue], removed: Mapping[SSAValue, int], result_type: TensorType,
        out: SSAValue | None = None,
    ) -> ComputeOp:
        return ReshapeOp(_chunk(chunks, self.input), result_type, out)


@op_definition
class BroadcastOp(DimsComputeOp, StreamSliceable):
    """%r = fusion.broadcast %x dims [0] : T -> R   (dims: result positions of new axes)"""

    name = "fusion.broadcast"

    def infer_axes(self) -> list[AxisShape]:
        axes = tensor_type(self.input).value_axes()
        rank = len(axes) + len(self.dims)
        for d in self.dims.get_values():
            _check_axis(d, rank, "broadcast dim")
        new = set(self.normalized_dims(rank))
        if len(new) != len(self.dims):
            raise VerifyException(f"broadcast dims {list(self.dims.get_values())} repeat an axis")
        inputs = iter(axes)
        return [(1, IterKind.BROADCAST) if i in new else (lambda a: (a.extent, a.kind))(next(inputs)) for i in range(rank)]

    def value_axis_targets(self, operand: SSAValue) -> list[int]:
        rank = tensor_type(self.result).rank
        new = set(self.normalized_dims(rank))
        return [i for i in range(rank) if i not in new]

    def stream_chunk(
        self, chunks: Mapping[SSAValue, SSAValue], removed: Mapping[SSAValue, int], result_type: TensorType,
        out: SSAValue | None = None,
    ) -> ComputeOp:
        gone = removed[self.result]
        dims = [d - (d > gone) for d in self.normalized_dims(tensor_type(self.result).rank) if d != gone]
        return BroadcastOp(_chunk(chunks, self.input), dims, result_type, out)


@op_definition
class SqueezeOp(DimsComputeOp, StreamSliceable):
    """%r = fusion.squeeze %x dims [0] : T -> R   (dims: input axes of extent 1 to drop)"""

    name = "fusion.squeeze"

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
        dropped = set(self.normalized_dims(rank))
        kept = [k for k in range(rank) if k not in dropped]
        return [kept.index(k) if k in kept else -1 for k in range(rank)]

    def axis_map(self, operand: SSAValue) -> dict[int, int]:
        return {k: v for k, v in super().axis_map(operand).items() if v >= 0}

    def stream_chunk(
        self, chunks: Mapping[SSAValue, SSAValue], removed: Mapping[SSAValue, int], result_type: TensorType,
        out: SSAValue | None = None,
    ) -> ComputeOp:
        gone = _removed_position(self.input, removed)
        dims = [d - (d > gone) for d in self.normalized_dims(len(tensor_type(self.input).value_axes()))]
        return SqueezeOp(_chunk(chunks, self.input), dims, result_type, out)


@op_definition
class ReduceOp(ComputeOp, StreamSliceable):
    """%r = fusion.reduce sum %x dims [1] : T<[4, 8]> -> R<[4, r8]>

    The reduced axes stay in the result's logical domain, marked as reduction axes
    (as nvFuser does); consumers do not see them.
    """

    name = "fusion.reduce"
    kind = prop_def(ReduceKindAttr)
    input = operand_def(TensorType)
    dims = prop_def(DenseArrayBase[I64])
    traits = traits_def(StandaloneHostOp())
    assembly_format = "$kind $input `dims` $dims (`into` $out^)? attr-dict `:` type($input) `->` type($result)"

    def __init__(self, kind: ReduceKind, input: SSAValue, dims: Sequence[int], result_type: TensorType, out: SSAValue | None = None):
        init_flat(
            self, [input, out], [result_type], {"kind": ReduceKindAttr(kind), "dims": DenseArrayBase.from_list(i64, dims)}
        )

    def reduced_axes(self) -> list[int]:
        rank = len(tensor_type(self.input).value_axes())
        return sorted({_normalize(d, rank) for d in self.dims.get_values()})

    def verify_element_type(self) -> None:
        if self.kind.data in (ReduceKind.SUM, ReduceKind.PROD):
            _refuse_predicates(self)  # max and min of predicates are "any" and "all"
        super().verify_element_type()

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

    def stream_chunk(
        self, chunks: Mapping[SSAValue, SSAValue], removed: Mapping[SSAValue, int], result_type: TensorType,
        out: SSAValue | None = None,
    ) -> ComputeOp:
        gone = _removed_position(self.input, removed)
        dims = [d - (d > gone) for d in self.reduced_axes()]
        return ReduceOp(self.kind.data, _chunk(chunks, self.input), dims, result_type, out)


@op_definition
class MatmulOp(ComputeOp, StreamSliceable):
    """%c = fusion.matmul %a, %b : A<[..., M, K]>, B<[..., K, N]> -> C<[..., M, N, rK]>

    Batch axes broadcast as in torch.matmul; B may also be a plain [K, N] matrix. The
    result ends with the contracted axis as a reduction axis (nvFuser's MatmulOp). A 1-D
    operand follows torch.matmul: A<[K]> gives no M axis, B<[K]> no N axis (a stream loop
    slices a matrix down to a vector).
    """

    name = "fusion.matmul"
    a = operand_def(TensorType)
    b = operand_def(TensorType)
    epilogue = opt_prop_def(EpilogueAttr)
    """An activation applied to the product (`fusion.matmul %a, %b epilogue gelu_tanh`)."""
    traits = traits_def(StandaloneHostOp())
    assembly_format = ("$a `,` $b (`epilogue` $epilogue^)? (`into` $out^)? attr-dict `:` type($a) `,` type($b) "
                       "`->` type($result)")

    def __init__(self, a: SSAValue, b: SSAValue, result_type: TensorType, out: SSAValue | None = None,
                 epilogue: Epilogue | None = None):
        init_flat(self, [a, b, out], [result_type], {"epilogue": _epilogue_attr(epilogue)})

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
        m = [(a[-2].extent, a[-2].kind)] if len(a) >= 2 else []  # as a linear keeps its input's axes
        n = [(b[-1].extent, IterKind.ITERATION)] if len(b) >= 2 else []
        return batch + m + n + [(k_a.extent, IterKind.REDUCTION)]

    def value_axis_targets(self, operand: SSAValue) -> list[int]:
        a_rank, b_rank = len(tensor_type(self.a).value_axes()), len(tensor_type(self.b).value_axes())
        k = tensor_type(self.result).rank - 1
        n = k - 1 if b_rank >= 2 else k
        m = n - 1 if a_rank >= 2 else n
        if operand is self.a:
            return [k] if a_rank == 1 else list(range(m - (a_rank - 2), m)) + [m, k]
        return [k] if b_rank == 1 else list(range(m - (b_rank - 2), m)) + [k, n]

    def sharding_reference_operands(self) -> list[SSAValue]:
        """B decides the layout of the result (it is the weight), then A."""
        return [self.b, self.a]

    def verify_element_type(self) -> None:
        if tensor_type(self.a).element_type != tensor_type(self.b).element_type:
            raise VerifyException("matmul operands have different element types")
        _refuse_predicates(self)
        _verify_epilogue(self)
        super().verify_element_type()

    def stream_chunk(
        self, chunks: Mapping[SSAValue, SSAValue], removed: Mapping[SSAValue, int], result_type: TensorType,
        out: SSAValue | None = None,
    ) -> ComputeOp:
        return MatmulOp(_chunk(chunks, self.a), _chunk(chunks, self.b), result_type, out, epilogue_of(self))


def _epilogue_attr(epilogue: Epilogue | None) -> EpilogueAttr | None:
    return None if epilogue is None else EpilogueAttr(epilogue)


def epilogue_of(op: Operation) -> Epilogue | None:
    """The activation a matmul or linear applies to its result, if any."""
    attr = op.properties.get("epilogue")
    return attr.data if isinstance(attr, EpilogueAttr) else None


def _verify_epilogue(op: Operation) -> None:
    element, epilogue = tensor_type(op.results[0]).element_type, epilogue_of(op)
    if epilogue is not None and not isinstance(element, (Float16Type, BFloat16Type, Float32Type, Float64Type)):
        raise VerifyException(f"an epilogue {epilogue.value} needs a floating-point result, got {element}")


@op_definition
class LinearOp(ComputeOp, StreamSliceable):
    """%y = fusion.linear %x, %w (bias %b)? : X<[..., K]>, W<[N, K]>(, B<[N]>)? -> Y<[..., N, rK]>"""

    name = "fusion.linear"
    input = operand_def(TensorType)
    weight = operand_def(TensorType)
    bias = opt_operand_def(TensorType)
    epilogue = opt_prop_def(EpilogueAttr)
    """An activation applied to the result, after the bias (`epilogue gelu_tanh`)."""
    irdl_options = (AttrSizedOperandSegments(as_property=True),)
    traits = traits_def(StandaloneHostOp())
    assembly_format = (
        "$input `,` $weight (`bias` $bias^)? (`epilogue` $epilogue^)? (`into` $out^)? attr-dict `:` "
        "type($input) `,` type($weight) (`,` type($bias)^)? `->` type($result)"
    )

    def __init__(self, input: SSAValue, weight: SSAValue, bias: SSAValue | None, result_type: TensorType,
                 out: SSAValue | None = None, epilogue: Epilogue | None = None):
        init_segmented(self, [input, weight, bias, out], [result_type], {"epilogue": _epilogue_attr(epilogue)})

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

    def verify_element_type(self) -> None:
        _refuse_predicates(self)
        _verify_epilogue(self)
        super().verify_element_type()

    def value_axis_targets(self, operand: SSAValue) -> list[int]:
        rank = tensor_type(self.result).rank
        n, k = rank - 2, rank - 1
        if operand is self.input:
            return list(range(n)) + [k]
        if operand is self.weight:
            return [n, k]
        return [n]

    def sharding_reference_operands(self) -> list[SSAValue]:
        """The weight decides the layout of the result, then the bias, then the input."""
        return [v for v in (self.weight, self.bias, self.input) if v is not None]

    def stream_chunk(
        self, chunks: Mapping[SSAValue, SSAValue], removed: Mapping[SSAValue, int], result_type: TensorType,
        out: SSAValue | None = None,
    ) -> ComputeOp:
        bias = None if self.bias is None else _chunk(chunks, self.bias)
        return LinearOp(_chunk(chunks, self.input), _chunk(chunks, self.weight), bias, result_type, out, epilogue_of(self))


@op_definition
class SliceOp(ComputeOp, StreamSliceable):
    """%r = fusion.slice %x starts [0, 2] stops [4, 8] steps [1, 2] : T -> R"""

    name = "fusion.slice"
    input = operand_def(TensorType)
    starts = prop_def(DenseArrayBase[I64])
    stops = prop_def(DenseArrayBase[I64])
    steps = prop_def(DenseArrayBase[I64])
    traits = traits_def(StandaloneHostOp())
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

    def bounds(self) -> tuple[tuple[int, ...], tuple[int, ...], tuple[int, ...]]:
        """(starts, stops, steps), one entry per value axis of the input."""
        return self.starts.get_values(), self.stops.get_values(), self.steps.get_values()

    def infer_axes(self) -> list[AxisShape]:
        axes = tensor_type(self.input).value_axes()
        starts, stops, steps = self.bounds()
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

    def operand_chunk_stride(self, operand: SSAValue, axis: int) -> tuple[int, int]:
        """Result chunk `i` of a slice is input chunk `start + step * i`."""
        if operand is not self.input:
            return 0, 1
        position = tensor_type(operand).value_position(axis)
        starts, _, steps = self.bounds()
        return starts[position], steps[position]

    def stream_chunk(
        self, chunks: Mapping[SSAValue, SSAValue], removed: Mapping[SSAValue, int], result_type: TensorType,
        out: SSAValue | None = None,
    ) -> ComputeOp:
        gone = _removed_position(self.input, removed)
        starts, stops, steps = (_drop(values, gone) for values in self.bounds())
        return SliceOp(_chunk(chunks, self.input), starts, stops, steps, result_type, out)


@op_definition
class SelectOp(ComputeOp, StreamSliceable):
    """%r = fusion.select %x[%i] dim 0 : T, index -> R   (drops axis `dim`)"""

    name = "fusion.select"
    input = operand_def(TensorType)
    index = operand_def(IndexType | IntegerType)
    dim = prop_def(IntegerAttr[I64])
    traits = traits_def(StandaloneHostOp())
    assembly_format = (
        "$input `[` $index `]` `dim` $dim (`into` $out^)? attr-dict `:` type($input) `,` "
        "type($index) `->` type($result)"
    )

    def __init__(self, input: SSAValue, index: SSAValue, dim: int, result_type: TensorType, out: SSAValue | None = None):
        super().__init__(
            operands=[input, index, out], result_types=[result_type],
            properties={"dim": i64_attr(dim)},
        )

    @property
    def axis(self) -> int:
        rank = len(tensor_type(self.input).value_axes())
        return _normalize(self.dim.value.data, rank)

    def infer_axes(self) -> list[AxisShape]:
        axes = tensor_type(self.input).value_axes()
        _check_axis(self.dim.value.data, len(axes), "select dim")
        extent = axes[self.axis].extent
        index = self.constant_index()
        if index is not None and (index < 0 or (extent != DYNAMIC and index >= extent)):
            raise VerifyException(f"index {index} is out of range for axis {self.axis} of extent {extent}")
        return [(a.extent, a.kind) for i, a in enumerate(axes) if i != self.axis]

    def constant_index(self) -> int | None:
        """The index when an `arith.constant` defines it."""
        owner = self.index.owner
        if isinstance(owner, arith.ConstantOp) and isinstance(owner.value, IntegerAttr):
            return owner.value.value.data
        return None

    def axis_map(self, operand: SSAValue) -> dict[int, int]:
        if operand is not self.input:
            return {}
        positions = tensor_type(self.input).value_positions()
        kept = [p for k, p in enumerate(positions) if k != self.axis]
        return {p: i for i, p in enumerate(kept)}

    def stream_chunk(
        self, chunks: Mapping[SSAValue, SSAValue], removed: Mapping[SSAValue, int], result_type: TensorType,
        out: SSAValue | None = None,
    ) -> ComputeOp:
        gone = _removed_position(self.input, removed)
        dim = self.axis - (self.axis > gone)
        return SelectOp(_chunk(chunks, self.input), _chunk(chunks, self.index), dim, result_type, out)


# --------------------------------------------------------------------------- #
# Functions
# --------------------------------------------------------------------------- #


@op_definition
class FuncOp(FunctionLikeOp):
    """fusion.func @f(%a: T) -> R { ... fusion.return %r : R }

    A user fusion, or a kernel unit that a host program runs with hir.post_on_stream
    (hostir_dialect/symbols.py tells them apart).
    """

    name = "fusion.func"
    RETURN_OP: ClassVar[str] = "fusion.return"

    def verify_(self) -> None:
        for index, t in enumerate(self.function_type.inputs.data):
            if not isinstance(t, (TensorType, *SCALAR_TYPES)):
                raise VerifyException(f"argument {index} must be a tensor or a scalar, got {t}")
        super().verify_()


@op_definition
class ReturnOp(ReturnLikeOp):
    """fusion.return %r : R

    The fusion's outputs; in a kernel unit, what its hir.post_on_stream returns (or
    writes into its outs).
    """

    name = "fusion.return"
    traits = traits_def(IsTerminator(), HasParent(FuncOp))


COMPUTE_OPS: list[type[ComputeOp]] = [
    SetOp, CastOp, PermuteOp, ReshapeOp, BroadcastOp, SqueezeOp, ReduceOp,
    MatmulOp, LinearOp, SliceOp, SelectOp,
    *UNARY_OPS.values(), GeluOp, *BINARY_OPS.values(),
]

def moves_no_data(func: FuncOp) -> bool:
    """Does the function only relabel its inputs' elements (reshape, permute, broadcast,
    squeeze: the layout ops an rFactor puts in front of a matmul)? Run eagerly, such a
    kernel unit gives views of its inputs wherever torch can."""
    layout_ops = (ReshapeOp, PermuteOp, BroadcastOp, SqueezeOp, ReturnOp)
    return all(isinstance(op, layout_ops) for op in func.body.block.ops)


Fusion = Dialect("fusion", [FuncOp, ReturnOp, *COMPUTE_OPS], [TensorType, ReduceKindAttr, GeluApproximationAttr, EpilogueAttr])
