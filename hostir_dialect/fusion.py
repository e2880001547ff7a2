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

from xdsl.dialects.builtin import (
    I64,
    BFloat16Type,
    BoolAttr,
    DenseArrayBase,
    Float16Type,
    Float32Type,
    Float64Type,
    FloatAttr,
    IndexType,
    IntegerAttr,
    IntegerType,
    Signedness,
    i1,
    i32,
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
    var_operand_def,
)
from xdsl.traits import EffectInstance, HasParent, IsTerminator, MemoryEffect, MemoryEffectKind, OpTrait
from xdsl.utils.exceptions import VerifyException
from xdsl.utils.str_enum import StrEnum

from . import cache_check
from .attributes import i64_attr
from .building import constant_integer, init_flat, init_segmented
from .definition import op_definition
from .functions import FunctionLikeOp, ReturnLikeOp
from .tensor_type import DYNAMIC, FLOAT_TYPES, INT64_MAX, Axis, IterKind, TensorType, is_floating_point, tensor_type

# --------------------------------------------------------------------------- #
# Shape rules
# --------------------------------------------------------------------------- #

AxisShape = tuple[int, IterKind]
"""A logical axis without parallelization: what shape rules compute."""

SCALAR_TYPES = (*FLOAT_TYPES, IntegerType, IndexType)


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

    def retyped(self, operands: Mapping[SSAValue, SSAValue], result_type: TensorType,
                out: SSAValue | None = None) -> ComputeOp:
        """This op (its properties and attributes) on the values `operands` maps its own
        operands to, of `result_type`, into `out` if given (in place of its own
        destination, where it has one); not verified."""
        replaces_destination = out is not None and self.out is not None
        kept = self.operands[:-1] if replaces_destination else self.operands  # the destination is the last operand
        properties = dict(self.properties)
        segments = properties.get(AttrSizedOperandSegments.attribute_name)
        if out is not None and not replaces_destination and isinstance(segments, DenseArrayBase):
            properties[AttrSizedOperandSegments.attribute_name] = DenseArrayBase.from_list(
                i32, [*segments.get_values()[:-1], 1]
            )
        return type(self).create(
            operands=[*(operands.get(v, v) for v in kept), *([out] if out is not None else [])],
            result_types=[result_type], properties=properties, attributes=dict(self.attributes),
        )

    def infer_axes(self) -> list[AxisShape]:
        raise NotImplementedError

    def axis_map(self, operand: SSAValue) -> dict[int, int]:
        """Logical axis of a tensor operand -> the result's logical axis it becomes.

        Axes that vanish (selected, squeezed) are absent. Reduction axes of the operand
        are not part of its value and never mapped; a broadcast axis maps to the result
        axis it is broadcast along. This is the "pairwise map"; sharding analysis uses
        the part of it `sharding_axis_map` keeps.
        """
        return dict(zip(tensor_type(operand).value_positions(), self.value_axis_targets(operand)))

    def sharding_axis_map(self, operand: SSAValue) -> dict[int, int]:
        """`axis_map` restricted to the axes along which each device's part of `operand`
        becomes that device's part of the result: what sharding analysis maps (all of
        them but the axes a slice cuts)."""
        return self.axis_map(operand)

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
        if not is_floating_point(source):
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
        ends = _static_group_ends(source, target, i, j)
        if ends is None:
            break
        groups.append((list(range(i, ends[0])), list(range(j, ends[1]))))
        i, j = ends
    return groups, i, j


def _static_group_ends(source: list[int], target: list[int], i: int, j: int) -> tuple[int, int] | None:
    """Where the group of static extents from `source[i]` and `target[j]` whose products
    match ends on each side (None where a dynamic extent or an end comes first)."""
    end_i, end_j, src_prod, dst_prod = i + 1, j + 1, source[i], target[j]
    while src_prod != dst_prod:
        if src_prod < dst_prod and end_i < len(source) and source[end_i] != DYNAMIC:
            src_prod *= source[end_i]
            end_i += 1
        elif src_prod > dst_prod and end_j < len(target) and target[end_j] != DYNAMIC:
            dst_prod *= target[end_j]
            end_j += 1
        else:
            return None
    return _past_unpaired_ones(source, target, end_i, end_j)


def _past_unpaired_ones(source: list[int], target: list[int], end_i: int, end_j: int) -> tuple[int, int]:
    """The ends of a group, moved past the extent-1 axes that follow it on one side only:
    they join the group before them, as `_paired_segments` has it, so that no group starts
    with one it could do without (`[4, 16]` to `[4, 1, 16]`: 16 becomes 16, not 1; an
    extent-1 axis on both sides is a group of its own)."""
    while True:
        one_i = end_i < len(source) and source[end_i] == 1
        one_j = end_j < len(target) and target[end_j] == 1
        if one_i == one_j:
            return end_i, end_j
        end_i, end_j = end_i + one_i, end_j + one_j


def _segments(t: TensorType) -> tuple[list[int], list[int]]:
    """The extents a reshape pairs, and the value axis each belongs to: an axis's extent,
    the pieces' extents of a dynamic axis split by static factors (`?(2 didx, ?)`: [2, ?]),
    or for a whole device axis of dynamic extent its devices (one element each)."""
    extents: list[int] = []
    owners: list[int] = []
    for index, axis in enumerate(t.value_axes()):
        parts = [p.extent for p in axis.pieces]
        if axis.extent == DYNAMIC and not axis.is_split and t.mesh is not None and axis.pieces[0].parallel.is_device:
            parts = [t.mesh.axis_size(axis.pieces[0].parallel)]
        elif axis.extent != DYNAMIC or parts.count(DYNAMIC) != 1:
            parts = [axis.extent]
        extents += parts
        owners += [index] * len(parts)
    return extents, owners


def _paired_segments(source: list[int], target: list[int]) -> list[tuple[range, range]] | None:
    """Groups of `source` and `target` segments, in order: static extents of equal
    products, or one dynamic extent of each side, with static ones before the dynamic one
    on the side whose group starts static (a split or merge by static factors: `?` and
    `[2, ?]`). Extent-1 segments pair with each other or join the group before them (the
    one after them at the start), so that no group starts with one it could do without.
    None if they do not all pair so."""
    groups: list[tuple[range, range]] = []
    i = j = 0
    while i < len(source) or j < len(target):
        one_i, one_j = i < len(source) and source[i] == 1, j < len(target) and target[j] == 1
        if one_i and one_j:
            groups.append((range(i, i + 1), range(j, j + 1)))
            i, j = i + 1, j + 1
            continue
        if (one_i or one_j) and groups:
            sources, targets = groups[-1]
            i, j = i + one_i, j + one_j
            groups[-1] = (range(sources.start, i), range(targets.start, j))
            continue
        if i == len(source) or j == len(target):
            return None  # extents left on one side only
        start_i, start_j = i, j
        while i < len(source) - 1 and source[i] == 1:
            i += 1
        while j < len(target) - 1 and target[j] == 1:
            j += 1
        end_i: int | None
        end_j: int | None
        if DYNAMIC in (source[i], target[j]):
            end_i, end_j = _next_dynamic(source, i), _next_dynamic(target, j)
        else:
            end_i, end_j = _static_group_ends(source, target, i, j) or (None, None)
        if end_i is None or end_j is None:
            return None
        i, j = end_i, end_j
        groups.append((range(start_i, i), range(start_j, j)))
    return groups or None


def _next_dynamic(extents: list[int], start: int) -> int | None:
    """The end of the run of static extents from `start` up to and with the first dynamic one."""
    return next((k + 1 for k in range(start, len(extents)) if extents[k] == DYNAMIC), None)


def _paired_groups(source_type: TensorType, target_type: TensorType) -> list[tuple[list[int], list[int]]] | None:
    """`_paired_segments` of the value axes' segments, as groups of axes (groups sharing the
    axis of a split are one)."""
    source, source_owner = _segments(source_type)
    target, target_owner = _segments(target_type)
    paired = _paired_segments(source, target)
    if paired is None:
        return None
    groups: list[tuple[list[int], list[int]]] = []
    for segments_in, segments_out in paired:
        sources = sorted({source_owner[k] for k in segments_in})
        targets = sorted({target_owner[k] for k in segments_out})
        if groups and (groups[-1][0][-1] == sources[0] or groups[-1][1][-1] == targets[0]):
            previous_sources, previous_targets = groups.pop()
            sources = sorted({*previous_sources, *sources})
            targets = sorted({*previous_targets, *targets})
        groups.append((sources, targets))
    return groups


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
        in order; trailing axes that no product matches join the last result axis.

        With dynamic extents, each is paired with one of the other side where every
        other group then matches statically (`_paired_segments`; a dynamic axis split
        by static factors counts as its pieces): that is what a reshape with one dynamic
        result extent computes (torch infers it from the rest), and it defines one with
        more, such as a pass splitting an axis into its pieces (`?(2 didx, ?)` into
        `[2 didx, ?]`). Otherwise groups are matched from both ends up to the first
        dynamic extent; what lies between is one group, since a dynamic extent's share
        of it is known only at run time."""
        return self._grouping()[0]

    def _grouping(self) -> tuple[list[tuple[list[int], list[int]]], bool]:
        """`groups()`, and whether every group's extents are known to match (no dynamic
        extent is left unpaired in one)."""
        source_axes, target_axes = tensor_type(self.input).value_axes(), tensor_type(self.result).axes
        source, target = [a.extent for a in source_axes], [a.extent for a in target_axes]
        if DYNAMIC in source or DYNAMIC in target:
            paired = _paired_groups(tensor_type(self.input), tensor_type(self.result))
            if paired is not None:
                return paired, True
        exact = DYNAMIC not in source + target
        head, i, j = _static_groups(source, target)
        if i == len(source) or j == len(target):
            if i < len(source):
                head.append((list(range(i, len(source))), [len(target) - 1]))
            return head, exact
        tail, end_i, end_j = _static_groups(source[i:][::-1], target[j:][::-1])
        tail = [(_from_end(s, len(source)), _from_end(t, len(target))) for s, t in reversed(tail)]
        middle = (list(range(i, len(source) - end_i)), list(range(j, len(target) - end_j)))
        if not middle[0] or not middle[1]:  # only size-1 axes on one side: join a neighbour
            neighbour = head.pop() if head else tail.pop(0)
            middle = (sorted(neighbour[0] + middle[0]), sorted(neighbour[1] + middle[1]))
        return [*head, middle, *tail], exact

    def sharding_axis_map(self, operand: SSAValue) -> dict[int, int]:
        """Without a group holding a dynamic extent that nothing pairs with (a merge or a
        split whose factors are known only at run time): where a device's part of it lies,
        and whether a split of it divides, is not known before the run."""
        groups, exact = self._grouping()
        if exact:
            return self.axis_map(operand)
        source_axes, target_axes = tensor_type(self.input).value_axes(), tensor_type(self.result).axes
        unknown = {k for sources, targets in groups
                   if DYNAMIC in [source_axes[s].extent for s in sources] + [target_axes[t].extent for t in targets]
                   for k in sources}
        position = {logical: k for k, logical in enumerate(tensor_type(operand).value_positions())}
        return {axis: target for axis, target in self.axis_map(operand).items() if position[axis] not in unknown}

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


class AxesReduction(ComputeOp, StreamSliceable):
    """An op reducing the axes `dims` of one tensor. The reduced axes stay in the
    result's logical domain, marked as reduction axes (as nvFuser does); consumers do not
    see them."""

    input = operand_def(TensorType)
    dims = prop_def(DenseArrayBase[I64])
    traits = traits_def(StandaloneHostOp())

    def reduced_axes(self) -> list[int]:
        rank = len(tensor_type(self.input).value_axes())
        return sorted({_normalize(d, rank) for d in self.dims.get_values()})

    def infer_axes(self) -> list[AxisShape]:
        axes = tensor_type(self.input).value_axes()
        if not len(self.dims):
            raise VerifyException(f"{self.name.removeprefix('fusion.')} needs at least one axis in dims")
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
        return self.reducing(_chunk(chunks, self.input), dims, result_type, out)

    @abc.abstractmethod
    def reducing(self, input: SSAValue, dims: Sequence[int], result_type: TensorType, out: SSAValue | None) -> ComputeOp:
        """This op (its kind, its other properties) reducing `dims` of `input`."""


@op_definition
class ReduceOp(AxesReduction):
    """%r = fusion.reduce sum %x dims [1] : T<[4, 8]> -> R<[4, r8]>"""

    name = "fusion.reduce"
    kind = prop_def(ReduceKindAttr)
    assembly_format = "$kind $input `dims` $dims (`into` $out^)? attr-dict `:` type($input) `->` type($result)"

    def __init__(self, kind: ReduceKind, input: SSAValue, dims: Sequence[int], result_type: TensorType, out: SSAValue | None = None):
        init_flat(
            self, [input, out], [result_type], {"kind": ReduceKindAttr(kind), "dims": DenseArrayBase.from_list(i64, dims)}
        )

    def verify_element_type(self) -> None:
        if self.kind.data in (ReduceKind.SUM, ReduceKind.PROD):
            _refuse_predicates(self)  # max and min of predicates are "any" and "all"
        super().verify_element_type()

    def reducing(self, input: SSAValue, dims: Sequence[int], result_type: TensorType, out: SSAValue | None) -> ComputeOp:
        return ReduceOp(self.kind.data, input, dims, result_type, out)


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


def epilogue_problem(epilogue: Epilogue, result: TensorType) -> str | None:
    """Why a matmul or linear of this result type cannot apply `epilogue` (None if it can)."""
    element = result.element_type
    if not is_floating_point(element):
        return f"an epilogue {epilogue.value} needs a floating-point result, got {element}"
    return None


def _verify_epilogue(op: Operation) -> None:
    epilogue = epilogue_of(op)
    if epilogue is not None and (problem := epilogue_problem(epilogue, tensor_type(op.results[0]))):
        raise VerifyException(problem)


@op_definition
class LinearOp(ComputeOp, StreamSliceable):
    """%y = fusion.linear %x, %w (bias %b)? : X<[..., K]>, W<[G.., N, K]>(, B<[G.., N]>)? -> Y<[G.., ..., N, rK]>

    `x @ w^T + b`. A weight of rank above 2 (nvFuser's linear) is a stack of weights:
    its leading axes G.. come first in the result, one linear per weight, and a bias has
    them too."""

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

    def stacked_axes(self) -> int:
        """How many leading axes the weight has before [N, K]."""
        return len(tensor_type(self.weight).value_axes()) - 2

    def infer_axes(self) -> list[AxisShape]:
        x, w = tensor_type(self.input).value_axes(), tensor_type(self.weight).value_axes()
        if len(x) < 1 or len(w) < 2:
            raise VerifyException(f"linear needs an input of rank >= 1 and a [.., N, K] weight, got ranks {len(x)} and {len(w)}")
        if not _extents_match(x[-1].extent, w[-1].extent):
            raise VerifyException(f"inner dimensions do not match: input has K={x[-1].extent}, weight has K={w[-1].extent}")
        if self.bias is not None:
            bias = tensor_type(self.bias).value_axes()
            expected = [a.extent for a in w[:-1]]
            if len(bias) != len(expected) or not all(map(_extents_match, [a.extent for a in bias], expected)):
                raise VerifyException(f"bias must have shape {expected} (the weight's without K), got {[a.extent for a in bias]}")
        stacked = axis_shapes(w[:-2])
        return stacked + axis_shapes(x[:-1]) + [(w[-2].extent, IterKind.ITERATION), (x[-1].extent, IterKind.REDUCTION)]

    def verify_element_type(self) -> None:
        _refuse_predicates(self)
        _verify_epilogue(self)
        super().verify_element_type()

    def value_axis_targets(self, operand: SSAValue) -> list[int]:
        rank = tensor_type(self.result).rank
        n, k = rank - 2, rank - 1
        stacked = list(range(self.stacked_axes()))
        if operand is self.input:
            return list(range(len(stacked), n)) + [k]
        if operand is self.weight:
            return stacked + [n, k]
        return stacked + [n]

    def sharding_reference_operands(self) -> list[SSAValue]:
        """The weight decides the layout of the result, then the bias, then the input."""
        return [v for v in (self.weight, self.bias, self.input) if v is not None]

    def stream_chunk(
        self, chunks: Mapping[SSAValue, SSAValue], removed: Mapping[SSAValue, int], result_type: TensorType,
        out: SSAValue | None = None,
    ) -> ComputeOp:
        bias = None if self.bias is None else _chunk(chunks, self.bias)
        return LinearOp(_chunk(chunks, self.input), _chunk(chunks, self.weight), bias, result_type, out, epilogue_of(self))


SLICE_TO_END = INT64_MAX
"""A slice's stop that means "to the end of the axis", whatever its extent at run time
(nvFuser's stop given as the axis's own symbolic extent)."""


@op_definition
class SliceOp(ComputeOp, StreamSliceable):
    """%r = fusion.slice %x starts [0, 2] stops [4, 8] steps [1, 2] : T -> R

    A stop of 9223372036854775807 (SLICE_TO_END) slices to the end of the axis: of a
    dynamic axis, the result's extent is dynamic."""

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

    def whole_axes(self) -> list[int]:
        """The value axes the slice keeps whole: from 0 to the end by 1."""
        axes = tensor_type(self.input).value_axes()
        return [k for k, (start, stop, step) in enumerate(zip(*self.bounds()))
                if start == 0 and step == 1 and stop in (SLICE_TO_END, axes[k].extent)]

    def infer_axes(self) -> list[AxisShape]:
        axes = tensor_type(self.input).value_axes()
        starts, stops, steps = self.bounds()
        if not len(starts) == len(stops) == len(steps) == len(axes):
            raise VerifyException(f"starts, stops and steps need one entry per axis ({len(axes)})")
        result = []
        for i, (axis, start, stop, step) in enumerate(zip(axes, starts, stops, steps)):
            if step < 1:
                raise VerifyException(f"axis {i}: step {step} must be positive")
            if stop == SLICE_TO_END:
                stop = axis.extent
                if stop == DYNAMIC:
                    result.append((DYNAMIC, IterKind.ITERATION))
                    continue
            if not 0 <= start <= stop or (axis.extent != DYNAMIC and stop > axis.extent):
                raise VerifyException(f"axis {i}: slice [{start}, {stop}) is out of bounds for extent {axis.extent}")
            result.append((-(-(stop - start) // step), IterKind.ITERATION))
        return result

    def sharding_axis_map(self, operand: SSAValue) -> dict[int, int]:
        """Without the axes the slice cuts (not [0, extent) by 1, which a dynamic extent
        never is known to be): a device's part of such an axis in the result is not its
        part of the input's, so a slice of a sharded axis reshards."""
        starts, stops, steps = self.bounds()
        extents = [a.extent for a in tensor_type(self.input).value_axes()]
        whole = {k for k, bounds in enumerate(zip(starts, stops, steps, extents)) if bounds[:3] == (0, bounds[3], 1)}
        position = {logical: k for k, logical in enumerate(tensor_type(operand).value_positions())}
        return {axis: target for axis, target in self.axis_map(operand).items() if position[axis] in whole}

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
        return constant_integer(self.index)

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
# nvFuser's other ops: concatenation, expansion, selection by predicate, index and
# random tensors, mean and variance, grouped GEMM, fused attention
# --------------------------------------------------------------------------- #


@op_definition
class CatOp(ComputeOp, StreamSliceable):
    """%r = fusion.cat %a, %b dim 1 : A, B -> R   (torch.cat: extents along `dim` add up)

    Every other axis maps to the result's; the concatenated one maps nowhere, since the
    shards of its inputs would interleave in the result: a sharded one is gathered first
    (decompose-reshardings), and a result sharded on it is sharded after."""

    name = "fusion.cat"
    inputs = var_operand_def(TensorType)
    dim = prop_def(IntegerAttr[I64])
    irdl_options = (AttrSizedOperandSegments(as_property=True),)
    assembly_format = "$inputs `dim` $dim (`into` $out^)? attr-dict `:` type($inputs) `->` type($result)"

    def __init__(self, inputs: Sequence[SSAValue], dim: int, result_type: TensorType, out: SSAValue | None = None):
        init_segmented(self, [list(inputs), out], [result_type], {"dim": i64_attr(dim)})

    @property
    def axis(self) -> int:
        return _normalize(self.dim.value.data, tensor_type(self.result).rank)

    def infer_axes(self) -> list[AxisShape]:
        operands = [tensor_type(v).value_axes() for v in self.inputs]
        if not operands:
            raise VerifyException("cat needs at least one tensor")
        ranks = {len(axes) for axes in operands}
        if len(ranks) > 1 or not operands[0]:
            raise VerifyException(f"cat needs tensors of one rank >= 1, got ranks {sorted(ranks)}")
        rank = len(operands[0])
        _check_axis(self.dim.value.data, rank, "cat dim")
        dim = _normalize(self.dim.value.data, rank)
        result = []
        for i in range(rank):
            extents = [axes[i].extent for axes in operands]
            if i == dim:
                total = DYNAMIC if DYNAMIC in extents else sum(extents)
                result.append((total, IterKind.ITERATION))
            elif not all(_extents_match(e, extents[0]) for e in extents):
                raise VerifyException(f"axis {i} has extents {extents}; only axis {dim} may differ")
            else:
                known = max(extents)
                kind = IterKind.BROADCAST if all(axes[i].is_broadcast for axes in operands) else IterKind.ITERATION
                result.append((known, kind))
        return result

    def verify_element_type(self) -> None:
        element_types = {tensor_type(v).element_type for v in [*self.inputs, self.result]}
        if len(element_types) > 1:
            raise VerifyException(f"cat needs one element type, got {sorted(map(str, element_types))}")

    def value_axis_targets(self, operand: SSAValue) -> list[int]:
        rank = len(tensor_type(operand).value_axes())
        return [-1 if i == self.axis else i for i in range(rank)]

    def axis_map(self, operand: SSAValue) -> dict[int, int]:
        return {k: v for k, v in super().axis_map(operand).items() if v >= 0}

    def derived_axes(self, operand: SSAValue) -> set[int]:
        return set(self.axis_map(operand).values()) | {self.axis}

    def slices_along(self, axis: int) -> bool:
        return axis != self.axis

    def stream_chunk(
        self, chunks: Mapping[SSAValue, SSAValue], removed: Mapping[SSAValue, int], result_type: TensorType,
        out: SSAValue | None = None,
    ) -> ComputeOp:
        dim = self.axis - (self.axis > removed[self.result])
        return CatOp([_chunk(chunks, v) for v in self.inputs], dim, result_type, out)


@op_definition
class ExpandOp(ComputeOp, StreamSliceable):
    """%r = fusion.expand %x : T<[b1, 4]> -> R<[8, 4]>
    %r = fusion.expand %x like %t axes [0, -1] : T<[b1, 4]>, L<[?, 3]> -> R<[?, 4]>

    A broadcast axis of the input takes any extent in the result (a view repeating its
    one element, torch's `expand`); every other axis keeps its extent. `like %t axes
    [..]`: result axis i takes its extent from axis axes[i] of %t (-1: from the result's
    type), for extents only known at run time. The extent is read, never %t's values."""

    name = "fusion.expand"
    input = operand_def(TensorType)
    like = opt_operand_def(TensorType)
    like_axes = opt_prop_def(DenseArrayBase[I64])
    irdl_options = (AttrSizedOperandSegments(as_property=True),)
    assembly_format = (
        "$input (`like` $like^ `axes` $like_axes)? (`into` $out^)? attr-dict `:` type($input) (`,` type($like)^)? "
        "`->` type($result)"
    )

    def __init__(self, input: SSAValue, result_type: TensorType, like: SSAValue | None = None,
                 like_axes: Sequence[int] | None = None, out: SSAValue | None = None):
        axes = None if like_axes is None else DenseArrayBase.from_list(i64, like_axes)
        init_segmented(self, [input, like, out], [result_type], {"like_axes": axes})

    def extent_sources(self) -> list[int]:
        """For each result axis, the axis of `like` giving its extent (-1: none)."""
        rank = tensor_type(self.result).rank
        return list(self.like_axes.get_values()) if self.like_axes is not None else [-1] * rank

    def infer_axes(self) -> list[AxisShape]:
        source, result = tensor_type(self.input).value_axes(), tensor_type(self.result).axes
        if (self.like is None) != (self.like_axes is None):
            raise VerifyException("expand takes `like %t` and `axes [..]` together")
        sources = self.extent_sources()
        like = tensor_type(self.like).value_axes() if self.like is not None else []
        if len(source) != len(result) or len(sources) != len(result):
            raise VerifyException(f"expand keeps the rank ({len(source)}); `axes` needs one entry per result axis")
        shapes = []
        for i, (a, r, s) in enumerate(zip(source, result, sources)):
            if s >= len(like) or s < -1:
                raise VerifyException(f"axes[{i}] = {s} is not an axis of the `like` tensor")
            if s >= 0 and not _extents_match(like[s].extent, r.extent):
                raise VerifyException(f"result axis {i} has extent {r.extent} but axis {s} of `like` has {like[s].extent}")
            if not a.is_broadcast:
                if s >= 0:
                    raise VerifyException(f"axis {i} is not a broadcast axis; only those take an extent from `like`")
                shapes.append((a.extent, a.kind))
            elif r.extent == DYNAMIC and s < 0:
                raise VerifyException(f"axis {i} expands to a dynamic extent; take it from a tensor: `like %t axes [..]`")
            else:
                shapes.append((r.extent, IterKind.BROADCAST if r.extent == 1 else IterKind.ITERATION))
        return shapes

    def verify_element_type(self) -> None:
        source, result = tensor_type(self.input).element_type, tensor_type(self.result).element_type
        if source != result:
            raise VerifyException(f"result element type {result} differs from the input's {source}")

    def value_axis_targets(self, operand: SSAValue) -> list[int]:
        if operand is self.input:
            return super().value_axis_targets(operand)
        rank = len(tensor_type(operand).value_axes())
        targets = [-1] * rank
        for result_axis, source in enumerate(self.extent_sources()):
            if source >= 0:
                targets[source] = result_axis
        return targets

    def axis_map(self, operand: SSAValue) -> dict[int, int]:
        return {k: v for k, v in super().axis_map(operand).items() if v >= 0}

    def sharding_reference_operands(self) -> list[SSAValue]:
        """The tensor giving the extents first: the result is as large as it is."""
        return [v for v in (self.like, self.input) if v is not None]

    def stream_chunk(
        self, chunks: Mapping[SSAValue, SSAValue], removed: Mapping[SSAValue, int], result_type: TensorType,
        out: SSAValue | None = None,
    ) -> ComputeOp:
        gone = removed[self.result]
        if self.like is None:
            return ExpandOp(_chunk(chunks, self.input), result_type, out=out)
        like_gone = removed.get(self.like)
        like_gone = None if like_gone is None else _removed_position(self.like, removed)
        sources = [s - (like_gone is not None and s > like_gone) if s >= 0 else s
                   for i, s in enumerate(self.extent_sources()) if i != gone]
        return ExpandOp(_chunk(chunks, self.input), result_type, _chunk(chunks, self.like), sources, out)


@op_definition
class WhereOp(ComputeOp, StreamSliceable):
    """%r = fusion.where %c, %a, %b : C, A, B -> R   (elementwise `c ? a : b`)

    %c is a predicate (i1); %a and %b tensors or scalars of the result's element type
    (of a kind no higher than it, as binary ops' scalars); tensors broadcast alike."""

    name = "fusion.where"
    condition = operand_def()
    lhs = operand_def()
    rhs = operand_def()
    assembly_format = (
        "$condition `,` $lhs `,` $rhs (`into` $out^)? attr-dict `:` type($condition) `,` type($lhs) `,` "
        "type($rhs) `->` type($result)"
    )

    def __init__(self, condition: SSAValue, lhs: SSAValue, rhs: SSAValue, result_type: TensorType, out: SSAValue | None = None):
        init_flat(self, [condition, lhs, rhs, out], [result_type])

    def infer_axes(self) -> list[AxisShape]:
        for operand in (self.condition, self.lhs, self.rhs):
            if not isinstance(operand.type, (TensorType, *SCALAR_TYPES)):
                raise VerifyException(f"operand of type {operand.type} is neither a tensor nor a scalar")
        tensors = self.tensor_inputs()
        if not tensors:
            raise VerifyException("at least one operand must be a tensor")
        return broadcast_axes([tensor_type(t).value_axes() for t in tensors], self.name)

    def verify_element_type(self) -> None:
        condition = self.condition.type
        if not is_predicate(tensor_type(self.condition).element_type if isinstance(condition, TensorType) else condition):
            raise VerifyException(f"the condition must be a predicate (i1), got {condition}")
        result = tensor_type(self.result).element_type
        for operand in (self.lhs, self.rhs):
            if isinstance(operand.type, TensorType) and operand.type.element_type != result:
                raise VerifyException(f"operand of type {operand.type} does not have the result's element type {result}")
            if not isinstance(operand.type, TensorType) and _scalar_kind(operand.type) > _scalar_kind(result):
                raise VerifyException(f"scalar of type {operand.type} does not fit element type {result}")

    def stream_chunk(
        self, chunks: Mapping[SSAValue, SSAValue], removed: Mapping[SSAValue, int], result_type: TensorType,
        out: SSAValue | None = None,
    ) -> ComputeOp:
        return WhereOp(_chunk(chunks, self.condition), _chunk(chunks, self.lhs), _chunk(chunks, self.rhs), result_type, out)


class PositionalOp(ComputeOp):
    """An op whose values depend on the global position of each element (an index, a
    random number, a triangle): on a rank, a shard computes from its elements' positions
    in the unsharded tensor, so every layout gives the values of one device."""

    def infer_axes(self) -> list[AxisShape]:
        return axis_shapes(tensor_type(self.result).axes)


@op_definition
class IotaOp(PositionalOp):
    """%r = fusion.iota %start, %step : i64, i64 -> !fusion.tensor<i64[8]>

    `start + step * i` at position i (nvFuser's iota; the length is the result's extent)."""

    name = "fusion.iota"
    start = operand_def(IntegerType | IndexType | Float16Type | BFloat16Type | Float32Type | Float64Type)
    step = operand_def(IntegerType | IndexType | Float16Type | BFloat16Type | Float32Type | Float64Type)
    assembly_format = "$start `,` $step (`into` $out^)? attr-dict `:` type($start) `,` type($step) `->` type($result)"

    def __init__(self, start: SSAValue, step: SSAValue, result_type: TensorType, out: SSAValue | None = None):
        init_flat(self, [start, step, out], [result_type])

    def infer_axes(self) -> list[AxisShape]:
        axes = tensor_type(self.result).axes
        if len(axes) != 1 or axes[0].is_reduction:
            raise VerifyException("iota makes a tensor of rank 1")
        return super().infer_axes()

    def verify_element_type(self) -> None:
        result = tensor_type(self.result).element_type
        if is_predicate(result):
            raise VerifyException("iota makes numbers, not predicates")
        for operand in (self.start, self.step):
            if _scalar_kind(operand.type) > _scalar_kind(result):
                raise VerifyException(f"scalar of type {operand.type} does not fit element type {result}")


class RandomOp(PositionalOp):
    """A random op: the numbers at global position p are a hash of (seed, offset + p),
    so they are the same on every layout. Without `seed`/`offset` operands the seed is
    torch's initial seed mixed with `stream` (each random op of a fusion has its own) and
    the offset counts the op's runs, so each run draws new numbers."""

    stream = prop_def(IntegerAttr[I64])


@op_definition
class UniformOp(RandomOp):
    """%r = fusion.uniform %lo, %hi (seed %s offset %o)? stream 0 : f64, f64 (, i64, i64)? -> R

    Numbers uniform in [lo, hi) (nvFuser's uniform; rounding to the element type may
    reach hi)."""

    name = "fusion.uniform"
    low = operand_def(Float16Type | BFloat16Type | Float32Type | Float64Type | IntegerType)
    high = operand_def(Float16Type | BFloat16Type | Float32Type | Float64Type | IntegerType)
    seed = opt_operand_def(base(IntegerType) | base(IndexType))
    offset = opt_operand_def(base(IntegerType) | base(IndexType))
    irdl_options = (AttrSizedOperandSegments(as_property=True),)
    assembly_format = (
        "$low `,` $high (`seed` $seed^)? (`offset` $offset^)? `stream` $stream (`into` $out^)? attr-dict `:` "
        "type($low) `,` type($high) (`,` type($seed)^)? (`,` type($offset)^)? `->` type($result)"
    )

    def __init__(self, low: SSAValue, high: SSAValue, result_type: TensorType, stream: int,
                 seed: SSAValue | None = None, offset: SSAValue | None = None, out: SSAValue | None = None):
        init_segmented(self, [low, high, seed, offset, out], [result_type], {"stream": i64_attr(stream)})

    def verify_element_type(self) -> None:
        if (self.seed is None) != (self.offset is None):
            raise VerifyException("uniform takes a seed and an offset together, or neither")
        result = tensor_type(self.result).element_type
        if not is_floating_point(result):
            raise VerifyException(f"uniform makes floating-point numbers, got element type {result}")


@op_definition
class RngSeedOp(RandomOp):
    """%s = fusion.rng_seed stream 0 : !fusion.tensor<ui64[2]>

    The (seed, offset) that a random op drawing without explicit ones would use on this
    run, as a tensor: what nvFuser's sdpfa_fwd returns as its philox seed, so that
    sdpfa_bwd replays the forward's dropout."""

    name = "fusion.rng_seed"
    assembly_format = "`stream` $stream (`into` $out^)? attr-dict `:` type($result)"

    def __init__(self, stream: int, result_type: TensorType, out: SSAValue | None = None):
        init_flat(self, [out], [result_type], {"stream": i64_attr(stream)})

    def infer_axes(self) -> list[AxisShape]:
        if tensor_type(self.result).shape != (2,):
            raise VerifyException("rng_seed makes a tensor of 2 elements: (seed, offset)")
        return super().infer_axes()

    def verify_element_type(self) -> None:
        if tensor_type(self.result).element_type != RNG_STATE_TYPE:
            raise VerifyException(f"rng_seed makes {RNG_STATE_TYPE} numbers")


RNG_STATE_TYPE = IntegerType(64, Signedness.UNSIGNED)
"""The element type of random states (torch's philox seed and offset are uint64)."""


@op_definition
class TriuOp(ComputeOp, StreamSliceable):
    """%r = fusion.triu %x diagonal 0 : T -> R

    The upper triangle of the last two axes (torch.triu): elements below diagonal
    `diagonal` become zero, by their global positions."""

    name = "fusion.triu"
    input = operand_def(TensorType)
    diagonal = prop_def(IntegerAttr[I64])
    assembly_format = "$input `diagonal` $diagonal (`into` $out^)? attr-dict `:` type($input) `->` type($result)"

    def __init__(self, input: SSAValue, diagonal: int, result_type: TensorType, out: SSAValue | None = None):
        init_flat(self, [input, out], [result_type], {"diagonal": i64_attr(diagonal)})

    def infer_axes(self) -> list[AxisShape]:
        axes = tensor_type(self.input).value_axes()
        if len(axes) < 2:
            raise VerifyException(f"triu needs a tensor of rank >= 2, got rank {len(axes)}")
        return axis_shapes(axes)

    def slices_along(self, axis: int) -> bool:
        """Along a batch axis: the rows and columns of a chunk are those of the whole."""
        return axis < tensor_type(self.result).rank - 2

    def stream_chunk(
        self, chunks: Mapping[SSAValue, SSAValue], removed: Mapping[SSAValue, int], result_type: TensorType,
        out: SSAValue | None = None,
    ) -> ComputeOp:
        return TriuOp(_chunk(chunks, self.input), self.diagonal.value.data, result_type, out)


def _refuse_integers(op: ComputeOp) -> None:
    source = tensor_type(op.tensor_inputs()[0]).element_type
    if not is_floating_point(source):
        raise VerifyException(f"{op.name} takes a floating-point tensor, got {source}; cast it first")


@op_definition
class MeanOp(AxesReduction):
    """%r = fusion.mean %x dims [1] : T<[4, 8]> -> R<[4, r8]>"""

    name = "fusion.mean"
    assembly_format = "$input `dims` $dims (`into` $out^)? attr-dict `:` type($input) `->` type($result)"

    def __init__(self, input: SSAValue, dims: Sequence[int], result_type: TensorType, out: SSAValue | None = None):
        init_flat(self, [input, out], [result_type], {"dims": DenseArrayBase.from_list(i64, dims)})

    def verify_element_type(self) -> None:
        _refuse_integers(self)
        super().verify_element_type()

    def reducing(self, input: SSAValue, dims: Sequence[int], result_type: TensorType, out: SSAValue | None) -> ComputeOp:
        return MeanOp(input, dims, result_type, out)


@op_definition
class VarOp(AxesReduction):
    """%r = fusion.var %x dims [1] correction 1 : T<[4, 8]> -> R<[4, r8]>

    The variance over `dims`: the sum of squared deviations from the mean divided by
    N - correction (torch.var's `correction`)."""

    name = "fusion.var"
    correction = prop_def(IntegerAttr[I64])
    assembly_format = (
        "$input `dims` $dims `correction` $correction (`into` $out^)? attr-dict `:` type($input) `->` type($result)"
    )

    def __init__(self, input: SSAValue, dims: Sequence[int], correction: int, result_type: TensorType, out: SSAValue | None = None):
        init_flat(self, [input, out], [result_type], {"dims": DenseArrayBase.from_list(i64, dims),
                                                       "correction": i64_attr(correction)})

    def verify_element_type(self) -> None:
        _refuse_integers(self)
        super().verify_element_type()

    def reducing(self, input: SSAValue, dims: Sequence[int], result_type: TensorType, out: SSAValue | None) -> ComputeOp:
        return VarOp(input, dims, self.correction.value.data, result_type, out)


class Grouping(StrEnum):
    """Which axis a grouped GEMM's offsets cut into groups (torch._grouped_mm's cases)."""

    M = "m"
    """a [B.., M, K] with M in groups, b [B.., G, K, N]: result [B.., M, N]."""
    N = "n"
    """a [B.., G, M, K], b [B.., K, N] with N in groups: result [B.., M, N]."""
    K = "k"
    """a [B.., M, K], b [B.., K, N], K in groups: result [B.., G, M, N]."""


@irdl_attr_definition
class GroupingAttr(EnumAttribute[Grouping], SpacedOpaqueSyntaxAttribute):
    """`m`, `n` or `k` in a grouped_mm."""

    name = "fusion.grouping"


@op_definition
class GroupedMmOp(ComputeOp, StreamSliceable):
    """%r = fusion.grouped_mm %a, %b, %offsets groups m : A, B, O -> R

    One GEMM per group (nvFuser's grouped_mm, torch._grouped_mm): `offsets` [G] holds
    where each group ends along the grouped axis (a cumulative sum, read at run time).
    Batch axes B.. lead both operands and the result. The grouped axis maps nowhere:
    its groups are known only at run time, so a shard of it would cut them."""

    name = "fusion.grouped_mm"
    a = operand_def(TensorType)
    b = operand_def(TensorType)
    offsets = operand_def(TensorType)
    groups = prop_def(GroupingAttr)
    traits = traits_def(StandaloneHostOp())
    assembly_format = (
        "$a `,` $b `,` $offsets `groups` $groups (`into` $out^)? attr-dict `:` type($a) `,` type($b) `,` "
        "type($offsets) `->` type($result)"
    )

    def __init__(self, a: SSAValue, b: SSAValue, offsets: SSAValue, groups: Grouping, result_type: TensorType,
                 out: SSAValue | None = None):
        init_flat(self, [a, b, offsets, out], [result_type], {"groups": GroupingAttr(groups)})

    @property
    def grouping(self) -> Grouping:
        return self.groups.data

    def core_ranks(self) -> tuple[int, int]:
        """The ranks of a and b without batch axes."""
        return {Grouping.M: (2, 3), Grouping.N: (3, 2), Grouping.K: (2, 2)}[self.grouping]

    def batch(self) -> int:
        return len(tensor_type(self.a).value_axes()) - self.core_ranks()[0]

    def infer_axes(self) -> list[AxisShape]:
        a, b = tensor_type(self.a).value_axes(), tensor_type(self.b).value_axes()
        offsets = tensor_type(self.offsets).value_axes()
        core_a, core_b = self.core_ranks()
        batch = len(a) - core_a
        if batch < 0 or len(b) - core_b != batch:
            raise VerifyException(f"grouped_mm groups {self.grouping} needs ranks {core_a} and {core_b} (plus as many "
                                  f"batch axes on each), got {len(a)} and {len(b)}")
        if len(offsets) != 1:
            raise VerifyException(f"offsets must have rank 1, got {len(offsets)}")
        groups = offsets[0].extent
        k_a, k_b = a[-1].extent, b[-2].extent
        if not _extents_match(k_a, k_b):
            raise VerifyException(f"inner dimensions do not match: a has K={k_a}, b has K={k_b}")
        if self.grouping == Grouping.M and not _extents_match(b[batch].extent, groups):
            raise VerifyException(f"b has {b[batch].extent} groups but offsets has {groups}")
        if self.grouping == Grouping.N and not _extents_match(a[batch].extent, groups):
            raise VerifyException(f"a has {a[batch].extent} groups but offsets has {groups}")
        shapes = broadcast_axes([a[:batch], b[:batch]], "grouped_mm batch") if batch else []
        if self.grouping == Grouping.K:
            shapes.append((groups, IterKind.ITERATION))
        shapes += [(a[-2].extent, IterKind.ITERATION), (b[-1].extent, IterKind.ITERATION)]
        return shapes + [(k_a, IterKind.REDUCTION)]

    def verify_element_type(self) -> None:
        a, b = tensor_type(self.a).element_type, tensor_type(self.b).element_type
        offsets = tensor_type(self.offsets).element_type
        if a != b:
            raise VerifyException("grouped_mm operands have different element types")
        if not isinstance(offsets, IntegerType) or is_predicate(offsets):
            raise VerifyException(f"offsets must be integers, got {offsets}")
        _refuse_predicates(self)
        if tensor_type(self.result).element_type != a:
            raise VerifyException(f"result element type {tensor_type(self.result).element_type} differs from the operands' {a}")

    def value_axis_targets(self, operand: SSAValue) -> list[int]:
        batch = self.batch()
        rank = tensor_type(self.result).rank
        m, n, k = rank - 3, rank - 2, rank - 1
        grouped = list(range(batch))  # batch axes map to themselves
        if operand is self.offsets:
            return [m - 1] if self.grouping == Grouping.K else [-1]
        if operand is self.a:
            core = {Grouping.M: [-1, k], Grouping.N: [-1, m, k], Grouping.K: [m, -1]}[self.grouping]
        else:
            core = {Grouping.M: [-1, k, n], Grouping.N: [k, -1], Grouping.K: [-1, n]}[self.grouping]
        return grouped + core

    def axis_map(self, operand: SSAValue) -> dict[int, int]:
        return {k: v for k, v in super().axis_map(operand).items() if v >= 0}

    def derived_axes(self, operand: SSAValue) -> set[int]:
        """The result's rows come from a's, its columns from b's (mapped or not)."""
        rank = tensor_type(self.result).rank
        own = {self.a: {rank - 3}, self.b: {rank - 2}}.get(operand, set())
        return set(self.axis_map(operand).values()) | own

    def sharding_reference_operands(self) -> list[SSAValue]:
        """b decides the layout of the result (it holds the weights), then a."""
        return [self.b, self.a, self.offsets]

    def slices_along(self, axis: int) -> bool:
        """Along a batch axis only: the groups span M, N or K."""
        return axis < self.batch()

    def stream_chunk(
        self, chunks: Mapping[SSAValue, SSAValue], removed: Mapping[SSAValue, int], result_type: TensorType,
        out: SSAValue | None = None,
    ) -> ComputeOp:
        return GroupedMmOp(_chunk(chunks, self.a), _chunk(chunks, self.b), self.offsets, self.grouping, result_type, out)


class AttentionOutput(StrEnum):
    """Which result of nvFuser's sdpfa_fwd an op gives."""

    OUTPUT = "output"
    LOGSUMEXP = "logsumexp"


class AttentionGradient(StrEnum):
    """Which result of nvFuser's sdpfa_bwd an op gives."""

    QUERY = "query"
    KEY = "key"
    VALUE = "value"


@irdl_attr_definition
class AttentionOutputAttr(EnumAttribute[AttentionOutput], SpacedOpaqueSyntaxAttribute):
    name = "fusion.attention_output"


@irdl_attr_definition
class AttentionGradientAttr(EnumAttribute[AttentionGradient], SpacedOpaqueSyntaxAttribute):
    name = "fusion.attention_gradient"


class AttentionOp(ComputeOp):
    """Scaled dot-product attention, softmax(q k^T * scale + causal mask) v, with dropout
    of probability `dropout_p` replayable from the (seed, offset) tensors (a
    `fusion.rng_seed` and its offset). q [N.., H, L, E], k [N.., H, S, E], v [N.., H, S, Ev].
    Only the batch and head axes N.., H map to the result: each head attends on its own,
    so a sharding over heads (or batches) computes locally, and any other sharded axis of
    an operand is gathered first."""

    dropout_p = prop_def(FloatAttr[Float64Type])
    is_causal = prop_def(BoolAttr)
    scale = opt_prop_def(FloatAttr[Float64Type])

    def query(self) -> SSAValue:
        raise NotImplementedError

    def heads_and_batch(self) -> int:
        """How many leading axes (N.., H) every operand shares."""
        return len(tensor_type(self.query()).value_axes()) - 2

    def check_operands(self, q: SSAValue, k: SSAValue, v: SSAValue, seed: SSAValue, offset: SSAValue) -> None:
        qa, ka, va = (tensor_type(x).value_axes() for x in (q, k, v))
        if len(qa) < 3 or len(ka) != len(qa) or len(va) != len(qa):
            raise VerifyException(f"attention needs q, k, v of one rank >= 3, got {len(qa)}, {len(ka)} and {len(va)}")
        lead = [[a.extent for a in axes[:-2]] for axes in (qa, ka, va)]
        if not all(all(map(_extents_match, other, lead[0])) for other in lead[1:]):
            raise VerifyException(f"q, k and v need the same batch and head axes, got {lead}")
        if not _extents_match(qa[-1].extent, ka[-1].extent) or not _extents_match(ka[-2].extent, va[-2].extent):
            raise VerifyException("k needs q's head size and v's sequence length")
        if tensor_type(seed).value_shape() != (2,) or tensor_type(offset).value_shape() != ():
            raise VerifyException("the random state is a seed of 2 elements and an offset of none")
        if not 0.0 <= self.dropout_p.value.data < 1.0:
            raise VerifyException(f"dropout probability {self.dropout_p.value.data} is not in [0, 1)")
        for x in (seed, offset):
            if tensor_type(x).element_type != RNG_STATE_TYPE:
                raise VerifyException(f"the random state has element type {RNG_STATE_TYPE}")
        element_types = {tensor_type(x).element_type for x in (q, k, v)}
        if len(element_types) > 1 or not is_floating_point(next(iter(element_types))):
            raise VerifyException(f"q, k and v need one floating-point element type, got {sorted(map(str, element_types))}")

    def value_axis_targets(self, operand: SSAValue) -> list[int]:
        lead = self.heads_and_batch()
        rank = len(tensor_type(operand).value_axes())
        return [i if i < lead and rank > lead else -1 for i in range(rank)]

    def axis_map(self, operand: SSAValue) -> dict[int, int]:
        return {k: v for k, v in super().axis_map(operand).items() if v >= 0}

    def derived_axes(self, operand: SSAValue) -> set[int]:
        """Every result axis is made of the tensors attended over, none of the random state."""
        if operand in self.random_state():
            return set()
        return set(range(tensor_type(self.result).rank))

    def random_state(self) -> tuple[SSAValue, SSAValue]:
        raise NotImplementedError

    def sharding_reference_operands(self) -> list[SSAValue]:
        return [self.query(), *by_parallelism([v for v in self.tensor_inputs() if v is not self.query()])]


def _attention_properties(dropout_p: float, is_causal: bool, scale: float | None) -> dict[str, Attribute | None]:
    return {"dropout_p": FloatAttr(dropout_p, Float64Type()), "is_causal": BoolAttr.from_bool(is_causal),
            "scale": None if scale is None else FloatAttr(scale, Float64Type())}


@op_definition
class SdpfaFwdOp(AttentionOp):
    """%o = fusion.sdpfa_fwd output %q, %k, %v, %seed, %offset dropout_p .. is_causal .. : .. -> O<[N.., H, L, Ev]>
    %l = fusion.sdpfa_fwd logsumexp ...                                                  -> L<f32[N.., H, L]>

    nvFuser's sdpfa_fwd, one result per op: `output` (q's element type) or `logsumexp`
    (f32, the log of each softmax row's denominator, which sdpfa_bwd reads)."""

    name = "fusion.sdpfa_fwd"
    result_kind = prop_def(AttentionOutputAttr)
    q = operand_def(TensorType)
    k = operand_def(TensorType)
    v = operand_def(TensorType)
    seed = operand_def(TensorType)
    offset = operand_def(TensorType)
    traits = traits_def(StandaloneHostOp())
    assembly_format = (
        "$result_kind $q `,` $k `,` $v `,` $seed `,` $offset `dropout_p` $dropout_p `is_causal` $is_causal "
        "(`scale` $scale^)? (`into` $out^)? attr-dict `:` type($q) `,` type($k) `,` type($v) `,` type($seed) `,` "
        "type($offset) `->` type($result)"
    )

    def __init__(self, result_kind: AttentionOutput, q: SSAValue, k: SSAValue, v: SSAValue, seed: SSAValue,
                 offset: SSAValue, dropout_p: float, is_causal: bool, scale: float | None, result_type: TensorType,
                 out: SSAValue | None = None):
        properties = {"result_kind": AttentionOutputAttr(result_kind), **_attention_properties(dropout_p, is_causal, scale)}
        init_flat(self, [q, k, v, seed, offset, out], [result_type], properties)

    def query(self) -> SSAValue:
        return self.q

    def random_state(self) -> tuple[SSAValue, SSAValue]:
        return self.seed, self.offset

    def infer_axes(self) -> list[AxisShape]:
        self.check_operands(self.q, self.k, self.v, self.seed, self.offset)
        q, v = tensor_type(self.q).value_axes(), tensor_type(self.v).value_axes()
        rows = axis_shapes(q[:-1])
        return rows if self.result_kind.data == AttentionOutput.LOGSUMEXP else rows + [(v[-1].extent, IterKind.ITERATION)]

    def verify_element_type(self) -> None:
        expected = Float32Type() if self.result_kind.data == AttentionOutput.LOGSUMEXP else tensor_type(self.q).element_type
        if tensor_type(self.result).element_type != expected:
            raise VerifyException(f"the {self.result_kind.data} of attention has element type {expected}")


@op_definition
class SdpfaBwdOp(AttentionOp):
    """%dq = fusion.sdpfa_bwd query %grad, %q, %k, %v, %o, %l, %seed, %offset dropout_p .. is_causal .. : .. -> Q

    nvFuser's sdpfa_bwd, one gradient per op (`query`, `key` or `value`), from the
    forward's output %o and logsumexp %l and its random state."""

    name = "fusion.sdpfa_bwd"
    gradient = prop_def(AttentionGradientAttr)
    grad_output = operand_def(TensorType)
    q = operand_def(TensorType)
    k = operand_def(TensorType)
    v = operand_def(TensorType)
    output = operand_def(TensorType)
    logsumexp = operand_def(TensorType)
    seed = operand_def(TensorType)
    offset = operand_def(TensorType)
    traits = traits_def(StandaloneHostOp())
    assembly_format = (
        "$gradient $grad_output `,` $q `,` $k `,` $v `,` $output `,` $logsumexp `,` $seed `,` $offset "
        "`dropout_p` $dropout_p `is_causal` $is_causal (`scale` $scale^)? (`into` $out^)? attr-dict `:` "
        "type($grad_output) `,` type($q) `,` type($k) `,` type($v) `,` type($output) `,` type($logsumexp) `,` "
        "type($seed) `,` type($offset) `->` type($result)"
    )

    def __init__(self, gradient: AttentionGradient, grad_output: SSAValue, q: SSAValue, k: SSAValue, v: SSAValue,
                 output: SSAValue, logsumexp: SSAValue, seed: SSAValue, offset: SSAValue, dropout_p: float,
                 is_causal: bool, scale: float | None, result_type: TensorType, out: SSAValue | None = None):
        properties = {"gradient": AttentionGradientAttr(gradient), **_attention_properties(dropout_p, is_causal, scale)}
        init_flat(self, [grad_output, q, k, v, output, logsumexp, seed, offset, out], [result_type], properties)

    def query(self) -> SSAValue:
        return self.q

    def random_state(self) -> tuple[SSAValue, SSAValue]:
        return self.seed, self.offset

    def differentiated(self) -> SSAValue:
        return {AttentionGradient.QUERY: self.q, AttentionGradient.KEY: self.k, AttentionGradient.VALUE: self.v}[
            self.gradient.data]

    def infer_axes(self) -> list[AxisShape]:
        self.check_operands(self.q, self.k, self.v, self.seed, self.offset)
        q, v = tensor_type(self.q).value_axes(), tensor_type(self.v).value_axes()
        expected = [*q[:-1], v[-1]]
        for name, value, axes in (("grad_output", self.grad_output, expected), ("output", self.output, expected),
                                  ("logsumexp", self.logsumexp, q[:-1])):
            got = [a.extent for a in tensor_type(value).value_axes()]
            if len(got) != len(axes) or not all(map(_extents_match, got, [a.extent for a in axes])):
                raise VerifyException(f"{name} has shape {got}; the forward's is {[a.extent for a in axes]}")
        return axis_shapes(tensor_type(self.differentiated()).value_axes())

    def verify_element_type(self) -> None:
        expected = tensor_type(self.q).element_type
        for value in (self.grad_output, self.output, self.result):
            if tensor_type(value).element_type != expected:
                raise VerifyException(f"the gradient, the output and the result need q's element type {expected}")
        if tensor_type(self.logsumexp).element_type != Float32Type():
            raise VerifyException("logsumexp has element type f32")


PARITY_OPS: list[type[ComputeOp]] = [
    CatOp, ExpandOp, WhereOp, IotaOp, UniformOp, RngSeedOp, TriuOp, MeanOp, VarOp, GroupedMmOp, SdpfaFwdOp, SdpfaBwdOp,
]
"""The ops that nvFuser's multi-device Python tests use beyond the ones above."""


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
    *PARITY_OPS,
]


def moves_no_data(func: FuncOp) -> bool:
    """Does the function only relabel its inputs' elements (reshape, permute, broadcast,
    squeeze: the layout ops an rFactor puts in front of a matmul)? Run eagerly, such a
    kernel unit gives views of its inputs wherever torch can."""
    layout_ops = (ReshapeOp, PermuteOp, BroadcastOp, SqueezeOp, ReturnOp)
    return all(isinstance(op, layout_ops) for op in func.body.block.ops)


Fusion = Dialect(
    "fusion", [FuncOp, ReturnOp, *COMPUTE_OPS],
    [TensorType, ReduceKindAttr, GeluApproximationAttr, EpilogueAttr, GroupingAttr, AttentionOutputAttr,
     AttentionGradientAttr],
)
