"""The Python frontend: build fusion IR in the style of nvFuser's `FusionDefinition`.

    with FusionDefinition() as fd:
        a = fd.define_tensor([8, 64], dtype="float32")
        b = fd.ops.set(a)
        fd.add_output(b)
    b.axis(0).parallelize(ParallelType.Stream)
    print(fd)

Ops are recorded while the `with` block is open; scheduling (`set_device_mesh`,
`outer_split`, `axis(i).parallelize`) may come later, as in nvFuser. IR types are
immutable, so each `Tensor` is a mutable model (logical axes, their loop pieces, mesh,
allocation order) and `to_module()` emits a fresh, verified xDSL module from it.

Result shapes come from the dialect: each op is first built on placeholder values and
its `infer_axes()` gives the result's axes, so the frontend and the verifier never
disagree about shapes.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from enum import Enum

from xdsl.dialects import arith
from xdsl.dialects.builtin import (
    BFloat16Type,
    Float16Type,
    Float32Type,
    Float64Type,
    FloatAttr,
    IntegerAttr,
    IntegerType,
    ModuleOp,
    i1,
    i32,
    i64,
)
from xdsl.ir import Attribute, Block, Operation, SSAValue
from xdsl.utils.exceptions import VerifyException

from . import fusion
from .fusion import AxisShape
from .tensor_type import DYNAMIC, INT64_MAX, Axis, IterKind, Mesh, Piece, TensorDesc, TensorType
from .tensor_type import ParallelKind as _PT


class FusionDefinitionError(ValueError):
    """A mistake in a fusion definition, reported when the offending call is made."""


# --------------------------------------------------------------------------- #
# Names in nvFuser's spelling
# --------------------------------------------------------------------------- #


class ParallelType:
    """nvFuser's parallel types, as users spell them; each is a member of the dialect's
    `tensor_type.ParallelKind`."""

    Serial = _PT.SERIAL
    Stream = _PT.STREAM
    DIDx = _PT.DIDX
    DIDy = _PT.DIDY
    # nvFuser's Python bindings also spell them like this
    serial = _PT.SERIAL
    stream = _PT.STREAM
    mesh_x = _PT.DIDX
    mesh_y = _PT.DIDY


class DataType(Enum):
    """nvFuser's data types; the value is the torch name (`torch.float32` -> "float32")."""

    Double = "float64"
    Float = "float32"
    Half = "float16"
    BFloat16 = "bfloat16"
    Int = "int64"
    Int32 = "int32"
    Bool = "bool"

    @property
    def element_type(self) -> Attribute:
        return _ELEMENT_TYPES[self]

    @property
    def is_float(self) -> bool:
        return isinstance(self.element_type, (Float16Type, BFloat16Type, Float32Type, Float64Type))


_ELEMENT_TYPES: dict[DataType, Attribute] = {
    DataType.Double: Float64Type(),
    DataType.Float: Float32Type(),
    DataType.Half: Float16Type(),
    DataType.BFloat16: BFloat16Type(),
    DataType.Int: i64,
    DataType.Int32: i32,
    DataType.Bool: i1,
}
_DTYPE_NAMES: dict[str, DataType] = {
    **{d.value: d for d in DataType},
    **{str(t): d for d, t in _ELEMENT_TYPES.items()},  # the IR's spelling: "f32", "i1", ...
}


def data_type(dtype: object) -> DataType:
    """A DataType from a DataType, a name ("float32" or "f32"), a torch dtype or an xDSL type."""
    if isinstance(dtype, DataType):
        return dtype
    name = None
    if isinstance(dtype, str):
        name = dtype
    elif type(dtype).__module__ == "torch" and type(dtype).__name__ == "dtype":
        name = str(dtype).removeprefix("torch.")  # no torch import needed to read a dtype
    elif isinstance(dtype, Attribute):
        name = str(dtype)
    if name in _DTYPE_NAMES:
        return _DTYPE_NAMES[name]
    supported = ", ".join(d.value for d in DataType)
    raise FusionDefinitionError(f"unsupported dtype {dtype!r}; use one of {supported} (or DataType.X)")


def _data_type_of(element_type: Attribute) -> DataType:
    return _DTYPE_NAMES[str(element_type)]


class DeviceMesh:
    """Device ids in a 1-D (`DeviceMesh([0, 1])`) or 2-D (`DeviceMesh([[0, 1], [2, 3]])`) grid."""

    def __init__(self, devices: Sequence[int] | Sequence[Sequence[int]]):
        try:
            self.mesh = Mesh.of(_device_grid(devices))
            # A tensor without axes reports exactly the mesh's own problems.
            problems = list(TensorDesc(i1, (), self.mesh).problems())
        except (VerifyException, FusionDefinitionError) as error:
            problems = [str(error)]
        if problems:
            raise FusionDefinitionError(f"invalid device mesh {devices!r}: {problems[0]}")

    @property
    def shape(self) -> tuple[int, ...]:
        return self.mesh.shape

    @property
    def size(self) -> int:
        return self.mesh.size

    @property
    def device_ids(self) -> list[int]:
        return list(self.mesh.devices)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, DeviceMesh) and other.mesh == self.mesh

    def __hash__(self) -> int:
        return hash(self.mesh)

    def __repr__(self) -> str:
        return f"DeviceMesh({self.mesh})"


def _device_grid(devices: object) -> list[int] | list[list[int]]:
    """The device ids of a 1-D list or a 2-D list of rows, checked to be integers."""
    if _is_list(devices) and all(_is_int(d) for d in devices):
        return list(devices)
    if _is_list(devices) and devices and all(_is_list(row) for row in devices):
        if any(_is_list(d) for row in devices for d in row):
            raise FusionDefinitionError("device meshes have at most 2 dimensions")
        if all(_is_int(d) for row in devices for d in row):
            return [list(row) for row in devices]
    raise FusionDefinitionError("device ids must be integers, in a list or a list of rows")


def _is_list(value: object) -> bool:
    return isinstance(value, Sequence) and not isinstance(value, (str, bytes))


def _is_int(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


# --------------------------------------------------------------------------- #
# The mutable model of values
# --------------------------------------------------------------------------- #


@dataclass(eq=False)
class _LogicalAxis:
    extent: int
    kind: IterKind
    pieces: list[IterDomain] = field(default_factory=list)


class IterDomain:
    """One loop axis of a tensor (a whole logical axis or a piece of a split one)."""

    def __init__(self, tensor: Tensor, logical: _LogicalAxis, extent: int):
        self._tensor = tensor
        self._logical = logical
        self.extent = extent
        self.parallel_type = _PT.SERIAL

    @property
    def is_reduction(self) -> bool:
        return self._logical.kind == IterKind.REDUCTION

    @property
    def is_broadcast(self) -> bool:
        return self._logical.kind == IterKind.BROADCAST

    def parallelize(self, parallel_type: object) -> None:
        parallel = _parallel_type(parallel_type)
        tensor = self._tensor
        if self not in tensor.loop_domain:
            raise FusionDefinitionError(
                f"{tensor.name}: this axis is no longer in the loop domain (it was split); "
                f"take the new axes from {tensor.name}.axis(i)"
            )
        if parallel != _PT.SERIAL:
            for index, other in enumerate(tensor.loop_domain):
                if other is not self and other.parallel_type == parallel:
                    raise FusionDefinitionError(
                        f"{tensor.name}: loop axis {index} is already parallelized on {parallel}; "
                        f"a tensor has at most one {parallel} axis"
                    )
        self.parallel_type = parallel
        tensor._fd._revise()

    def __repr__(self) -> str:
        kind = "" if self._logical.kind == IterKind.ITERATION else str(self._logical.kind)
        extent = "?" if self.extent == DYNAMIC else str(self.extent)
        return f"IterDomain({kind}{extent} {self.parallel_type})"


def _parallel_type(value: object) -> _PT:
    if isinstance(value, str) and value in set(_PT):
        return _PT(value)
    raise FusionDefinitionError(
        f"unknown parallel type {value!r}; use ParallelType.Serial, Stream, DIDx or DIDy"
    )


class _Value:
    """A value of one FusionDefinition: a tensor or a scalar constant."""

    def __init__(self, fd: FusionDefinition, name: str):
        self._fd = fd
        self.name = name

    @property
    def type(self) -> Attribute:
        raise NotImplementedError


class Scalar(_Value):
    """A compile-time scalar (`fd.define_scalar`), emitted as an `arith.constant`.

    A Python number used as an operand becomes an unnamed Scalar that is recorded (and
    named) together with the op using it, so a rejected op leaves no stray constant.
    """

    def __init__(self, fd: FusionDefinition, value: bool | int | float, dtype: DataType):
        super().__init__(fd, "")
        self.value = value
        self.dtype = dtype
        self.attribute = _constant_attribute(value, dtype)

    @property
    def type(self) -> Attribute:
        return self.dtype.element_type

    def __repr__(self) -> str:
        return f"{self.name}: {self.value!r} : {self.dtype.value}"


class Tensor(_Value):
    """A tensor of a FusionDefinition, with nvFuser's scheduling methods."""

    def __init__(self, fd: FusionDefinition, name: str, element_type: Attribute, axes: Sequence[AxisShape]):
        super().__init__(fd, name)
        self.element_type = element_type
        self._axes: list[_LogicalAxis] = []
        for extent, kind in axes:
            logical = _LogicalAxis(extent, kind)
            logical.pieces.append(IterDomain(self, logical, extent))
            self._axes.append(logical)
        self.device_mesh: DeviceMesh | None = None
        self._alloc_order: tuple[int, ...] | None = None

    # -- inspection ---------------------------------------------------------------
    @property
    def dtype(self) -> DataType:
        return _data_type_of(self.element_type)

    @property
    def shape(self) -> tuple[int, ...]:
        """The value's shape (reduction axes are not part of it; -1 = dynamic)."""
        return tuple(a.extent for a in self._axes if a.kind != IterKind.REDUCTION)

    @property
    def ndim(self) -> int:
        return len(self.shape)

    @property
    def loop_domain(self) -> list[IterDomain]:
        return [piece for axis in self._axes for piece in axis.pieces]

    @property
    def type(self) -> TensorType:
        """The tensor type as scheduled so far; an error while the schedule is incomplete."""
        if problem := self._schedule_problem():
            raise FusionDefinitionError(f"{self.name}: {problem}")
        desc = self._desc()
        return TensorType.of(desc.element_type, desc.axes, desc.mesh, desc.alloc_order)

    def _desc(self) -> TensorDesc:
        axes = tuple(
            Axis(a.extent, a.kind, tuple(Piece(p.extent, p.parallel_type) for p in a.pieces))
            for a in self._axes
        )
        mesh = None if self.device_mesh is None else self.device_mesh.mesh
        return TensorDesc(self.element_type, axes, mesh, self._alloc_order)

    def _shape_type(self) -> TensorType:
        """The type without scheduling: all that shape rules look at."""
        return TensorType.of(self.element_type, [Axis(a.extent, a.kind) for a in self._axes])

    def __repr__(self) -> str:
        return f"Tensor({self.name}, shape={list(self.shape)}, dtype={self.dtype.value})"

    # -- scheduling -----------------------------------------------------------------
    def axis(self, index: int) -> IterDomain:
        """Loop axis `index` (negative counts from the end), as nvFuser's `tv.axis(i)`."""
        return self.loop_domain[self._loop_index(index, "axis")]

    def set_device_mesh(self, mesh: DeviceMesh) -> None:
        if not isinstance(mesh, DeviceMesh):
            raise FusionDefinitionError(f"{self.name}.set_device_mesh expects a DeviceMesh, got {mesh!r}")
        self.device_mesh = mesh
        self._fd._revise()

    def outer_split(self, axis: int, factor: int) -> Tensor:
        """Split loop axis `axis` into an outer axis of extent `factor` and the remainder."""
        index = self._loop_index(axis, "outer_split axis")
        piece = self.loop_domain[index]
        if isinstance(factor, bool) or not isinstance(factor, int) or factor <= 0:
            raise FusionDefinitionError(f"{self.name}.outer_split: factor must be a positive int, got {factor!r}")
        if piece.parallel_type != _PT.SERIAL:
            raise FusionDefinitionError(
                f"{self.name}.outer_split: loop axis {index} is parallelized on {piece.parallel_type}; "
                "split before parallelizing"
            )
        if piece.extent != DYNAMIC and piece.extent % factor:
            raise FusionDefinitionError(
                f"{self.name}.outer_split: factor {factor} does not divide extent {piece.extent} "
                f"of loop axis {index}"
            )
        logical = piece._logical
        inner = DYNAMIC if piece.extent == DYNAMIC else piece.extent // factor
        at = logical.pieces.index(piece)
        logical.pieces[at : at + 1] = [IterDomain(self, logical, factor), IterDomain(self, logical, inner)]
        self._fd._revise()
        return self

    def set_allocation_order(self, order: Sequence[int]) -> None:
        """Lay the local buffer out with logical axes in this (major-to-minor) order."""
        if sorted(order) != list(range(len(self._axes))):
            raise FusionDefinitionError(
                f"{self.name}.set_allocation_order: {list(order)} is not a permutation of "
                f"its {len(self._axes)} logical axes"
            )
        self._alloc_order = tuple(order)
        self._fd._revise()

    def _loop_index(self, index: object, what: str) -> int:
        size = len(self.loop_domain)
        if isinstance(index, bool) or not isinstance(index, int) or not -size <= index < size:
            raise FusionDefinitionError(
                f"{self.name}: {what} {index!r} is out of range for a loop domain of {size} axes"
            )
        return index % size

    def _schedule_problem(self) -> str | None:
        device_axes = [p.parallel_type for p in self.loop_domain if p.parallel_type.is_device]
        if device_axes and self.device_mesh is None:
            return (
                f"{device_axes[0]} axis on a tensor without a device mesh; call "
                f"{self.name}.set_device_mesh(DeviceMesh([...])) first"
            )
        return next(self._desc().problems(), None)


# --------------------------------------------------------------------------- #
# The definition
# --------------------------------------------------------------------------- #

Builder = Callable[[Sequence[SSAValue], Attribute], Operation]
"""Builds an op from its operand values and result type."""


@dataclass(eq=False)
class _Node:
    operands: list[_Value]
    build: Builder
    result: _Value


class FusionDefinition:
    """Define a fusion inside `with FusionDefinition() as fd:`; see the module docstring."""

    def __init__(self, name: str = "fusion"):
        self.name = name
        self.ops = Ops(self)
        self._state = "new"
        self._inputs: list[Tensor] = []
        self._outputs: list[Tensor] = []
        self._nodes: list[_Node] = []
        self._count = 0
        self.revision = 0
        """Changes whenever the definition or a schedule does, so that what was built
        from this definition (a lowered program, a compiled one) knows it is stale."""

    def __enter__(self) -> FusionDefinition:
        if self._state != "new":
            raise FusionDefinitionError("a FusionDefinition can be entered only once")
        self._state = "open"
        return self

    def __exit__(self, *exc_info) -> None:
        self._state = "closed"

    # -- definition -----------------------------------------------------------------
    def define_tensor(self, shape: Sequence[int], dtype: object = DataType.Float) -> Tensor:
        """A fusion input. -1 is a dynamic extent; extent 1 is a broadcast axis (as nvFuser)."""
        self._check_open("define_tensor")
        element_type = data_type(dtype).element_type
        tensor = Tensor(self, self._next_name("T"), element_type, _extents("define_tensor", shape))
        self._inputs.append(tensor)
        self._revise()
        return tensor

    def define_scalar(self, value: bool | int | float, dtype: object = None) -> Scalar:
        """A constant; dtype defaults as nvFuser's: bool -> Bool, int -> Int, float -> Double."""
        self._check_open("define_scalar")
        if dtype is None:
            dtype = _default_scalar_type(value)
        try:
            scalar = Scalar(self, value, data_type(dtype))
        except FusionDefinitionError as error:
            raise FusionDefinitionError(f"define_scalar: {error}") from None
        self._record_constant(scalar)
        return scalar

    def add_output(self, tensor: Tensor) -> None:
        self._check_open("add_output")
        self._check_tensor(tensor, "add_output")
        self._outputs.append(tensor)
        self._revise()

    def _check_open(self, what: str) -> None:
        if self._state == "new":
            raise FusionDefinitionError(f"{what}: define the fusion inside `with FusionDefinition() as fd:`")
        if self._state == "closed":
            raise FusionDefinitionError(
                f"{what}: this FusionDefinition is closed (its `with` block has ended); only "
                "scheduling calls are allowed now"
            )

    def _check_tensor(self, value: object, what: str) -> Tensor:
        if not isinstance(value, Tensor):
            raise FusionDefinitionError(f"{what}: expected a Tensor of this FusionDefinition, got {value!r}")
        self._check_own(value, what)
        return value

    def _check_own(self, value: _Value, what: str) -> None:
        if value._fd is not self:
            raise FusionDefinitionError(f"{what}: {value.name} belongs to another FusionDefinition")

    def _next_name(self, prefix: str) -> str:
        name = f"{prefix}{self._count}"
        self._count += 1
        return name

    def _revise(self) -> None:
        self.revision += 1

    def _record_constant(self, scalar: Scalar) -> None:
        scalar.name = self._next_name("S")
        self._nodes.append(_Node([], lambda _operands, _type: arith.ConstantOp(scalar.attribute), scalar))
        self._revise()

    def _define(
        self,
        what: str,
        operands: Sequence[_Value],
        build: Builder,
        element_type: Attribute,
        result_axes: Sequence[AxisShape] | None = None,
    ) -> Tensor:
        """Record an op; its result axes come from the op's own `infer_axes()`."""
        self._check_open(what)
        for operand in operands:
            self._check_own(operand, what)
        placeholders = Block(
            arg_types=[o._shape_type() if isinstance(o, Tensor) else o.type for o in operands]
        ).args
        try:
            if result_axes is None:
                result_axes = build(placeholders, TensorType.of(element_type, [])).infer_axes()  # type: ignore[attr-defined]  # a compute op's build: its Operation has infer_axes
            result_type = TensorType.of(element_type, [Axis(e, k) for e, k in result_axes])
            build(placeholders, result_type).verify()
        except VerifyException as error:
            reason = str(error).removeprefix("Operation does not verify: ")
            raise FusionDefinitionError(f"{what}: {reason}") from None
        for operand in operands:
            if isinstance(operand, Scalar) and not operand.name:
                self._record_constant(operand)
        result = Tensor(self, self._next_name("T"), element_type, result_axes)
        self._nodes.append(_Node(list(operands), build, result))
        self._revise()
        return result

    # -- emission ---------------------------------------------------------------------
    def to_module(self) -> ModuleOp:
        """A verified `builtin.module` holding one `fusion.func` with the current schedule."""
        types = {v: v.type for v in self._inputs + [n.result for n in self._nodes]}  # checks schedules
        func = fusion.FuncOp(self.name, [types[t] for t in self._inputs], [types[t] for t in self._outputs])
        values: dict[_Value, SSAValue] = {}
        for tensor, arg in zip(self._inputs, func.args):
            arg.name_hint = tensor.name
            values[tensor] = arg
        for node in self._nodes:
            op = node.build([values[o] for o in node.operands], types[node.result])
            op.results[0].name_hint = node.result.name
            func.body.block.add_op(op)
            values[node.result] = op.results[0]
        func.body.block.add_op(fusion.ReturnOp(*(values[t] for t in self._outputs)))
        module = ModuleOp([func])
        try:
            module.verify()
        except VerifyException as error:
            raise FusionDefinitionError(f"the emitted fusion does not verify: {error}") from None
        return module

    def __str__(self) -> str:
        return str(self.to_module())


def _extents(what: str, shape: object) -> list[AxisShape]:
    if not _is_list(shape) or not all(_is_int(e) and DYNAMIC <= e <= INT64_MAX for e in shape):
        raise FusionDefinitionError(
            f"{what}: shape must be a list of extents >= 0 (or -1 for dynamic) that fit in 64 bits, got {shape!r}"
        )
    return [_axis_shape(e) for e in shape]


def _axis_shape(extent: int) -> AxisShape:
    """As nvFuser: a new axis of static extent 1 is a broadcast axis."""
    return extent, IterKind.BROADCAST if extent == 1 else IterKind.ITERATION


def _default_scalar_type(value: object) -> DataType:
    if isinstance(value, bool):
        return DataType.Bool
    if isinstance(value, int):
        return DataType.Int
    if isinstance(value, float):
        return DataType.Double
    raise FusionDefinitionError(f"define_scalar: unsupported value {value!r}; use a bool, int or float")


def _constant_attribute(value: object, dtype: DataType) -> Attribute:
    if not isinstance(value, (bool, int, float)):
        raise FusionDefinitionError(f"unsupported scalar {value!r}; use a bool, int or float")
    if dtype.is_float:
        return FloatAttr(float(value), dtype.element_type)  # type: ignore[call-overload]  # a float DataType's element type is a float type
    if isinstance(value, float) or (dtype == DataType.Bool and value not in (0, 1)):
        raise FusionDefinitionError(f"{value!r} is not a valid {dtype.value} value")
    try:
        return IntegerAttr(int(value), dtype.element_type)  # type: ignore[call-overload]  # an integer DataType's element type is an integer type
    except VerifyException as error:
        raise FusionDefinitionError(str(error)) from None


# --------------------------------------------------------------------------- #
# fd.ops
# --------------------------------------------------------------------------- #


def _ints(what: str, values: object, name: str = "dims") -> list[int]:
    if isinstance(values, int) and not isinstance(values, bool):
        return [values]
    if isinstance(values, Sequence) and all(isinstance(v, int) and not isinstance(v, bool) for v in values):
        return list(values)
    raise FusionDefinitionError(f"{what}: {name} must be an int or a list of ints, got {values!r}")


class Ops:
    """`fd.ops`: every fusion op, named and called as in nvFuser's Python frontend."""

    def __init__(self, fd: FusionDefinition):
        self._fd = fd

    def _tensor(self, value: object, what: str) -> Tensor:
        return self._fd._check_tensor(value, what)

    def _unary(self, op: type[fusion.UnaryComputeOp], what: str, t: object, element_type: Attribute | None = None) -> Tensor:
        t = self._tensor(t, what)
        return self._fd._define(what, [t], lambda v, r: op(v[0], r), element_type or t.element_type)

    def set(self, t: Tensor) -> Tensor:
        return self._unary(fusion.SetOp, "fd.ops.set", t)

    def cast(self, t: Tensor, dtype: object) -> Tensor:
        return self._unary(fusion.CastOp, "fd.ops.cast", t, data_type(dtype).element_type)

    def gelu(self, t: Tensor, approximate: str = "none") -> Tensor:
        """Elementwise gelu (fusion.gelu): `approximate="none"` (erf) or `"tanh"`, as torch's."""
        if approximate not in set(fusion.GeluApproximation):
            raise FusionDefinitionError(
                f"fd.ops.gelu: approximate must be one of {', '.join(repr(m.value) for m in fusion.GeluApproximation)}, "
                f"got {approximate!r}")
        mode = fusion.GeluApproximation(approximate)
        t = self._tensor(t, "fd.ops.gelu")
        return self._fd._define("fd.ops.gelu", [t], lambda v, r: fusion.GeluOp(v[0], r, approximate=mode),
                                t.element_type)

    def _binary(self, function: str, lhs: object, rhs: object) -> Tensor:
        what = f"fd.ops.{function}"
        op = fusion.BINARY_OPS[function]
        tensors = [x for x in (lhs, rhs) if isinstance(x, Tensor)]
        if not tensors:
            raise FusionDefinitionError(f"{what}: at least one operand must be a Tensor, got {lhs!r} and {rhs!r}")
        for t in tensors:
            self._fd._check_own(t, what)
        element_type = tensors[0].element_type
        operands = [self._operand(x, element_type, what) for x in (lhs, rhs)]
        result_type = op.result_element_type(element_type)
        return self._fd._define(what, operands, lambda v, r: op(v[0], v[1], r), result_type)

    def _operand(self, value: object, element_type: Attribute, what: str) -> _Value:
        """A Tensor or Scalar as is; a Python number becomes a constant of the tensor's type."""
        if isinstance(value, _Value):
            return value
        if isinstance(value, (bool, int, float)):
            try:
                return Scalar(self._fd, value, _data_type_of(element_type))
            except FusionDefinitionError as error:
                raise FusionDefinitionError(f"{what}: {error}") from None
        raise FusionDefinitionError(f"{what}: operand {value!r} is neither a Tensor, a Scalar nor a number")

    def _reduce(self, kind: fusion.ReduceKind, t: Tensor, dims: object, keepdim: bool) -> Tensor:
        what = f"fd.ops.{kind}"
        t = self._tensor(t, what)
        if not isinstance(keepdim, bool):
            raise FusionDefinitionError(f"{what}: keepdim must be a bool, got {keepdim!r}")
        dims = list(range(t.ndim)) if dims is None else _ints(what, dims)
        result = self._fd._define(what, [t], lambda v, r: fusion.ReduceOp(kind, v[0], dims, r), t.element_type)
        if not keepdim:
            return result
        kept = {d % t.ndim for d in dims}
        return self.broadcast(result, [i in kept for i in range(t.ndim)])

    def sum(self, t: Tensor, dims: object = None, keepdim: bool = False) -> Tensor:
        return self._reduce(fusion.ReduceKind.SUM, t, dims, keepdim)

    def prod(self, t: Tensor, dims: object = None, keepdim: bool = False) -> Tensor:
        return self._reduce(fusion.ReduceKind.PROD, t, dims, keepdim)

    def max(self, t: Tensor, dims: object = None, keepdim: bool = False) -> Tensor:
        return self._reduce(fusion.ReduceKind.MAX, t, dims, keepdim)

    def min(self, t: Tensor, dims: object = None, keepdim: bool = False) -> Tensor:
        return self._reduce(fusion.ReduceKind.MIN, t, dims, keepdim)

    def matmul(self, a: Tensor, b: Tensor) -> Tensor:
        a, b = self._tensor(a, "fd.ops.matmul"), self._tensor(b, "fd.ops.matmul")
        return self._fd._define("fd.ops.matmul", [a, b], lambda v, r: fusion.MatmulOp(v[0], v[1], r), a.element_type)

    def linear(self, a: Tensor, w: Tensor, bias: Tensor | None = None) -> Tensor:
        what = "fd.ops.linear"
        operands = [self._tensor(x, what) for x in (a, w) + (() if bias is None else (bias,))]

        def build(v: Sequence[SSAValue], r: Attribute) -> Operation:
            return fusion.LinearOp(v[0], v[1], v[2] if len(v) > 2 else None, r)  # type: ignore[arg-type]  # r: the TensorType _define passes

        return self._fd._define(what, operands, build, operands[0].element_type)

    def broadcast(self, t: Tensor, is_broadcast_dim: Sequence[bool]) -> Tensor:
        """Insert broadcast axes where `is_broadcast_dim` (one flag per OUTPUT axis) is True."""
        what = "fd.ops.broadcast"
        t = self._tensor(t, what)
        flags = list(is_broadcast_dim) if _is_list(is_broadcast_dim) else [None]
        if not all(isinstance(f, bool) for f in flags) or flags.count(False) != t.ndim:
            raise FusionDefinitionError(
                f"{what}: is_broadcast_dim needs one bool per output axis with exactly "
                f"{t.ndim} False entries (the axes of {t.name}), got {flags!r}"
            )
        dims = [i for i, flag in enumerate(flags) if flag]
        return self._fd._define(what, [t], lambda v, r: fusion.BroadcastOp(v[0], dims, r), t.element_type)

    def permute(self, t: Tensor, dims: Sequence[int]) -> Tensor:
        t = self._tensor(t, "fd.ops.permute")
        dims = _ints("fd.ops.permute", dims)
        return self._fd._define("fd.ops.permute", [t], lambda v, r: fusion.PermuteOp(v[0], dims, r), t.element_type)

    def squeeze(self, t: Tensor, dims: Sequence[int]) -> Tensor:
        t = self._tensor(t, "fd.ops.squeeze")
        dims = _ints("fd.ops.squeeze", dims)
        return self._fd._define("fd.ops.squeeze", [t], lambda v, r: fusion.SqueezeOp(v[0], dims, r), t.element_type)

    def reshape(self, t: Tensor, new_shape: Sequence[int]) -> Tensor:
        """Reshape to `new_shape`; one -1 is inferred from a static input, else dynamic."""
        what = "fd.ops.reshape"
        t = self._tensor(t, what)
        axes = _extents(what, new_shape)
        extents = [e for e, _ in axes]
        if extents.count(DYNAMIC) > 1:
            raise FusionDefinitionError(f"{what}: only one extent of {list(new_shape)} can be -1 (inferred)")
        if DYNAMIC in extents and DYNAMIC not in t.shape:
            known, total = math.prod(e for e in extents if e != DYNAMIC), math.prod(t.shape)
            if known == 0 or total % known:
                raise FusionDefinitionError(
                    f"{what}: cannot infer -1 in {list(new_shape)}: {total} elements are not a multiple of {known}"
                )
            axes[extents.index(DYNAMIC)] = _axis_shape(total // known)
        return self._fd._define(
            what, [t], lambda v, r: fusion.ReshapeOp(v[0], r), t.element_type, result_axes=axes
        )

    def slice(
        self,
        t: Tensor,
        start_indices: Sequence[int],
        end_indices: Sequence[int],
        strides: Sequence[int] | None = None,
    ) -> Tensor:
        what = "fd.ops.slice"
        t = self._tensor(t, what)
        starts = _ints(what, start_indices, "start_indices")
        stops = _ints(what, end_indices, "end_indices")
        steps = [1] * len(starts) if strides is None else _ints(what, strides, "strides")

        def build(v: Sequence[SSAValue], r: Attribute) -> Operation:
            return fusion.SliceOp(v[0], starts, stops, steps, r)  # type: ignore[arg-type]  # r: the TensorType _define passes

        return self._fd._define(what, [t], build, t.element_type)

    def select(self, t: Tensor, index: int | Scalar, dim: int) -> Tensor:
        """Take `index` along axis `dim`, dropping it; `index` is an int or an integer Scalar."""
        what = "fd.ops.select"
        t = self._tensor(t, what)
        if isinstance(index, Scalar):
            if not isinstance(index.type, IntegerType) or index.dtype == DataType.Bool:
                raise FusionDefinitionError(f"{what}: index {index.name} must be an integer scalar, not {index.dtype.value}")
            value = index.value
        elif isinstance(index, int) and not isinstance(index, bool):
            value = index
            index = Scalar(self._fd, index, DataType.Int)
        else:
            raise FusionDefinitionError(f"{what}: index must be an int or an integer Scalar, got {index!r}")
        if isinstance(dim, int) and -t.ndim <= dim < t.ndim:
            extent = t.shape[dim]
            if value < 0 or (extent != DYNAMIC and value >= extent):
                raise FusionDefinitionError(f"{what}: index {value} is out of range for axis {dim} of extent {extent}")

        def build(v: Sequence[SSAValue], r: Attribute) -> Operation:
            return fusion.SelectOp(v[0], v[1], dim, r)  # type: ignore[arg-type]  # r: the TensorType _define passes

        return self._fd._define(what, [t, index], build, t.element_type)


def _add_elementwise_ops() -> None:
    """fd.ops.<f> for every unary and binary function of the dialect."""
    for function, op in fusion.UNARY_OPS.items():

        def unary(self: Ops, t: Tensor, op=op, function=function) -> Tensor:
            return self._unary(op, f"fd.ops.{function}", t)

        unary.__name__ = unary.__qualname__ = function
        unary.__doc__ = f"Elementwise {function} (fusion.{function})."
        setattr(Ops, function, unary)
    for function in fusion.BINARY_OPS:

        def binary(self: Ops, lhs: object, rhs: object, function=function) -> Tensor:
            return self._binary(function, lhs, rhs)

        binary.__name__ = binary.__qualname__ = function
        binary.__doc__ = f"Elementwise {function} (fusion.{function}); numbers and Scalars allowed."
        setattr(Ops, function, binary)


_add_elementwise_ops()
