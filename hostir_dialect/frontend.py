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
import operator
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from enum import Enum
from pathlib import Path
from types import FrameType
from typing import Any, TypeGuard, cast

from xdsl.dialects import arith
from xdsl.dialects.builtin import (
    BFloat16Type,
    FileLineColLoc,
    Float16Type,
    Float32Type,
    Float64Type,
    FloatAttr,
    IntAttr,
    IntegerAttr,
    IntegerType,
    ModuleOp,
    Signedness,
    StringAttr,
    i1,
    i32,
    i64,
)
from xdsl.ir import Attribute, Block, Operation, SSAValue
from xdsl.utils.exceptions import VerifyException

from . import fusion
from .fusion import AxisShape
from .tensor_type import (
    DYNAMIC,
    INT64_MAX,
    MAX_MESH_DIMENSIONS,
    Axis,
    IterKind,
    Mesh,
    Piece,
    TensorDesc,
    TensorType,
    is_floating_point,
    tensor_type,
)
from .tensor_type import ParallelKind as _PT


class FusionDefinitionError(ValueError):
    """A mistake in a fusion definition, reported when the offending call is made, at the
    user's line: `test.py:12:9: fd.ops.add: ...` (`reason` is the message without it)."""

    def __init__(self, reason: str):
        self.reason = reason
        location = _caller_location()
        where = "" if location is None else f"{location.filename.data}:{location.line.data}:{location.column.data}: "
        super().__init__(where + reason)


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
    DIDz = _PT.DIDZ
    # nvFuser's Python bindings also spell them like this
    serial = _PT.SERIAL
    stream = _PT.STREAM
    mesh_x = _PT.DIDX
    mesh_y = _PT.DIDY
    mesh_z = _PT.DIDZ


class MemoryType(Enum):
    """nvFuser's memory types (`tv.set_memory_type`)."""

    Local = "local"
    Shared = "shared"
    Global = "global"
    Symmetric = "symmetric"
    # nvFuser's Python bindings also spell them like this
    local = Local
    shared = Shared
    global_ = Global
    symmetric = Symmetric


class DataType(Enum):
    """nvFuser's data types; the value is the torch name (`torch.float32` -> "float32").
    `Null` is nvFuser's "no type" (`fd.ops.sum(x, dtype=DataType.Null)` keeps the default)."""

    Double = "float64"
    Float = "float32"
    Half = "float16"
    BFloat16 = "bfloat16"
    Int = "int64"
    Int32 = "int32"
    Bool = "bool"
    UInt64 = "uint64"
    Null = "null"

    def __call__(self) -> DataType:
        """nvFuser's `tv.dtype()` is a method: `t.dtype` and `t.dtype()` are the same."""
        return self

    @property
    def element_type(self) -> Attribute:
        if self is DataType.Null:
            raise FusionDefinitionError("DataType.Null is no element type")
        return _ELEMENT_TYPES[self]

    @property
    def is_float(self) -> bool:
        return is_floating_point(self.element_type)

    @property
    def is_integer(self) -> bool:
        """An integer type, not Bool."""
        return self in (DataType.Int, DataType.Int32, DataType.UInt64)


_ELEMENT_TYPES: dict[DataType, Attribute] = {
    DataType.Double: Float64Type(),
    DataType.Float: Float32Type(),
    DataType.Half: Float16Type(),
    DataType.BFloat16: BFloat16Type(),
    DataType.Int: i64,
    DataType.Int32: i32,
    DataType.Bool: i1,
    DataType.UInt64: IntegerType(64, Signedness.UNSIGNED),
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
    """Device ids in a 1-D (`DeviceMesh([0, 1])`), 2-D (`DeviceMesh([[0, 1], [2, 3]])`) or
    3-D grid; as in nvFuser, a torch tensor of ids (`torch.arange(4).reshape(2, 2)`) or a
    range works too."""

    def __init__(self, devices: Sequence[int] | Sequence[Sequence[int]]):
        try:
            self.mesh = Mesh.of(_device_grid(devices))
            # A tensor without axes reports exactly the mesh's own problems.
            problems = list(TensorDesc(i1, (), self.mesh).problems())
        except VerifyException as error:
            problems = [str(error)]
        except FusionDefinitionError as error:
            problems = [error.reason]
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


def _device_grid(devices: object, depth: int = 0) -> list:
    """The device ids of a list, a list of rows or a list of planes (or anything with
    `tolist()`, such as a torch tensor), checked to be integers."""
    if hasattr(devices, "tolist"):
        devices = devices.tolist()
    if isinstance(devices, range):
        devices = list(devices)
    if _is_list(devices) and all(_is_int(d) for d in devices):
        return list(devices)
    if _is_list(devices) and devices and all(_is_list(part) for part in devices):
        if depth + 1 >= MAX_MESH_DIMENSIONS:
            raise FusionDefinitionError(f"device meshes have at most {MAX_MESH_DIMENSIONS} dimensions")
        return [_device_grid(part, depth + 1) for part in devices]
    raise FusionDefinitionError("device ids must be integers, in a list, a list of rows or a list of planes")


def _is_list(value: object) -> TypeGuard[Sequence[Any]]:
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
                # A device type may shard one reduction axis beside one iteration axis:
                # nvFuser's request for a reduce-scatter.
                beside = parallel.is_device and other.is_reduction != self.is_reduction
                if other is not self and other.parallel_type == parallel and not beside:
                    raise FusionDefinitionError(
                        f"{tensor.name}: loop axis {index} is already parallelized on {parallel}; "
                        f"a tensor has at most one {parallel} axis"
                        + (" (and one on a reduction axis)" if parallel.is_device else "")
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
        f"unknown parallel type {value!r}; use ParallelType.Serial, Stream, DIDx, DIDy or DIDz"
    )


def _memory_type(value: object) -> MemoryType:
    if isinstance(value, MemoryType):
        return value
    if isinstance(value, str) and value in {m.value for m in MemoryType}:
        return MemoryType(value)
    raise FusionDefinitionError(f"unknown memory type {value!r}; use MemoryType.Global, Symmetric, Local or Shared")


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


class Extent:
    """nvFuser's `fd.ops.size(t, dim)` of a dynamic axis: its extent, known at run time.
    It stands for that extent in shapes (`broadcast_in_dim`, `expand`: a dimension of that
    extent) and in slice bounds (the axis's own extent: to its end)."""

    def __init__(self, tensor: Tensor, axis: int):
        self.tensor = tensor
        self.axis = axis
        """A value axis of `tensor`."""

    def __repr__(self) -> str:
        return f"fd.ops.size({self.tensor.name}, {self.axis})"


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
        self._unexpanded: Tensor | None = None
        """What `fd.ops.expand` made this tensor of: a tensor with extent-1 axes where this
        one has expanded ones (nvFuser's expanded broadcast axes, which an elementwise op
        still broadcasts to another extent)."""
        self._extent_ids = [fd._new_extent_id() if extent == DYNAMIC else None for extent, _ in axes]
        """A symbol for each dynamic logical axis; axes the definition proves equal share
        one (FusionDefinition._same_extent)."""
        self._loop: list[IterDomain] = [piece for axis in self._axes for piece in axis.pieces]
        """The loop domain in nvFuser's order: the pieces in logical order until a
        `reorder` moves them (the type keeps each axis's pieces in logical order)."""
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
        return list(self._loop)

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

    def _value_axis(self, index: int) -> int:
        """The logical axis of value axis `index`."""
        return [i for i, a in enumerate(self._axes) if a.kind != IterKind.REDUCTION][index]

    def _follow_layout(self, other: Tensor) -> None:
        """Take `other`'s allocation order (of a tensor of its rank), as nvFuser's
        attention results take their inputs'."""
        if other._alloc_order is not None and len(other._axes) == len(self._axes):
            self.set_allocation_order(other._alloc_order)

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
        return self._split("outer_split", axis, factor, inner=False)

    def inner_split(self, axis: int, factor: int) -> Tensor:
        """Split loop axis `axis` into the remainder and an inner axis of extent `factor`."""
        return self._split("inner_split", axis, factor, inner=True)

    def split(self, axis: int, factor: int, inner_split: bool = True) -> Tensor:
        """nvFuser's `tv.split(axis, factor, inner_split=True)`: `factor` is the inner
        extent, or the outer one with `inner_split=False`."""
        if not isinstance(inner_split, bool):
            raise FusionDefinitionError(f"{self.name}.split: inner_split must be a bool, got {inner_split!r}")
        return self._split("split", axis, factor, inner=inner_split)

    def _split(self, what: str, axis: int, factor: int, inner: bool) -> Tensor:
        index = self._loop_index(axis, f"{what} axis")
        piece = self._loop[index]
        if isinstance(factor, bool) or not isinstance(factor, int) or factor <= 0:
            raise FusionDefinitionError(f"{self.name}.{what}: factor must be a positive int, got {factor!r}")
        if piece.parallel_type != _PT.SERIAL:
            raise FusionDefinitionError(
                f"{self.name}.{what}: loop axis {index} is parallelized on {piece.parallel_type}; "
                "split before parallelizing"
            )
        if piece.extent != DYNAMIC and piece.extent % factor:
            raise FusionDefinitionError(
                f"{self.name}.{what}: factor {factor} does not divide extent {piece.extent} "
                f"of loop axis {index}"
            )
        logical = piece._logical
        rest = DYNAMIC if piece.extent == DYNAMIC else piece.extent // factor
        extents = (rest, factor) if inner else (factor, rest)
        if DYNAMIC in extents and any(p.extent == DYNAMIC for p in logical.pieces if p is not piece):
            raise FusionDefinitionError(f"{self.name}.{what}: an axis of dynamic extent may have one piece of dynamic extent")
        pieces = [IterDomain(self, logical, e) for e in extents]
        at = logical.pieces.index(piece)
        logical.pieces[at : at + 1] = pieces
        self._loop[index : index + 1] = pieces
        self._fd._revise()
        return self

    def shard(self, axis: int, parallel_type: object, devices: int) -> Tensor:
        """Shard logical axis `axis` over `devices` on `parallel_type`: split its innermost
        piece outer by `devices` and parallelize the outer part (a DTensor's `Shard(axis)`;
        a second call nests a shard inside the first, as DTensor does for a later mesh axis)."""
        if not _is_int(axis) or not -len(self._axes) <= axis < len(self._axes):
            raise FusionDefinitionError(f"{self.name}.shard: axis {axis!r} is out of range for {len(self._axes)} axes")
        piece = self._axes[axis].pieces[-1]
        position = self._loop.index(piece)
        if piece.extent != devices:
            self.outer_split(position, devices)
        self._loop[position].parallelize(parallel_type)
        return self

    def reorder(self, old_to_new: dict[int, int]) -> Tensor:
        """nvFuser's `tv.reorder({old: new, ..})`: move loop axes; the others keep their
        order in the remaining places. Only the loop order changes (`axis(i)`), never the
        logical axes, their pieces or the layout."""
        size = len(self._loop)
        if not isinstance(old_to_new, dict):
            raise FusionDefinitionError(f"{self.name}.reorder expects a dict {{old: new}}, got {old_to_new!r}")
        moves = {self._loop_index(old, "reorder axis"): self._loop_index(new, "reorder position")
                 for old, new in old_to_new.items()}
        if len(set(moves.values())) != len(moves):
            raise FusionDefinitionError(f"{self.name}.reorder: {old_to_new} moves two axes to one place")
        order: list[IterDomain | None] = [None] * size
        for old, new in moves.items():
            order[new] = self._loop[old]
        rest = iter(piece for i, piece in enumerate(self._loop) if i not in moves)
        self._loop = [piece if piece is not None else next(rest) for piece in order]
        self._fd._revise()
        return self

    def set_allocation_domain(self, axes: Sequence[IterDomain], new_contiguity: object = True) -> None:
        """nvFuser's allocation domain over loop axes. hostir lays a buffer out by its
        logical axes, each whole (device pieces hold one element each, so they may stand
        anywhere): the other pieces of one logical axis must come together and in order."""
        what = f"{self.name}.set_allocation_domain"
        if not _is_list(axes) or sorted(map(id, axes)) != sorted(map(id, self._loop)):
            raise FusionDefinitionError(f"{what}: axes must be this tensor's loop axes, each once")
        if not isinstance(new_contiguity, bool) and not (
            _is_list(new_contiguity) and all(c is None or isinstance(c, bool) for c in new_contiguity)
        ):
            raise FusionDefinitionError(f"{what}: new_contiguity must be a bool or a list of bools, got {new_contiguity!r}")
        order: list[int] = []
        for piece in axes:
            if piece.parallel_type.is_device:
                continue
            logical = self._axes.index(piece._logical)
            if order and order[-1] == logical:
                continue
            if logical in order:
                raise FusionDefinitionError(
                    f"{what}: the pieces of logical axis {logical} are apart; hostir allocates each logical axis whole"
                )
            order.append(logical)
        order += [i for i in range(len(self._axes)) if i not in order]  # axes of device pieces alone
        for logical, axis in enumerate(self._axes):
            kept = [p for p in axes if p._logical is axis and not p.parallel_type.is_device]
            if kept != [p for p in axis.pieces if not p.parallel_type.is_device]:
                raise FusionDefinitionError(f"{what}: the pieces of logical axis {logical} are out of order")
        self.set_allocation_order(order)

    def rfactor(self, axes: Sequence[int]) -> RFactor:
        """nvFuser's rFactor of a reduction: the reduction pieces at loop positions `axes`
        are reduced first, in a new tensor whose other reduction pieces are iterations, and
        this tensor reduces those. hostir's decompose-reshardings rFactors a reduction by
        itself wherever a reduction piece is device-parallel, so the returned view schedules
        this tensor: a device type on one of the other pieces is the partial per device."""
        what = f"{self.name}.rfactor"
        positions = [self._loop_index(a, "rfactor axis") for a in _ints(what, axes, "axes")]
        if not positions or not all(self._loop[p].is_reduction for p in positions):
            raise FusionDefinitionError(f"{what}: axes {list(axes)} must be reduction axes of the loop domain")
        kept = [piece for piece in self._loop if piece.is_reduction and self._loop.index(piece) not in positions]
        if not kept:
            raise FusionDefinitionError(f"{what}: axes {list(axes)} are every reduction axis; nothing is left to reduce after")
        return RFactor(self, [self._loop[p] for p in positions])

    def swizzle1d(self, axis: int, parallel_type: object) -> Tensor:
        """nvFuser's rotation of a loop axis by the device index on `parallel_type` (each
        rank starts a stream loop at its own chunk: a collective permute). An iteration
        order, never a value: hostir's stream-parallel-type already starts each rank's ring
        over a device axis turned Stream at its own shard, so this only checks its arguments."""
        self._loop_index(axis, "swizzle1d axis")
        if not _parallel_type(parallel_type).is_device:
            raise FusionDefinitionError(f"{self.name}.swizzle1d rotates by a device index; {parallel_type!r} is no device type")
        return self

    def set_memory_type(self, memory_type: object) -> None:
        """nvFuser's placement of this tensor's buffer. Global (device memory) and Symmetric
        (memory the team's peers can reach) ask for nothing hostir does not do already:
        every buffer is in device memory, and the buffers a copy-engine collective reads or
        writes are allocated symmetric (`hir.allocate symmetric`), while NCCL moves ordinary
        memory; neither changes a value. Local and Shared place a generated kernel's
        intermediates on chip, which Inductor decides for hostir's kernels: refused."""
        kind = _memory_type(memory_type)
        if kind in (MemoryType.Local, MemoryType.Shared):
            raise FusionDefinitionError(
                f"{self.name}.set_memory_type({kind.name}) is not supported: on-chip placement within a kernel is "
                "Inductor's choice for hostir's compiled units; fusion tensors live in device memory (Global), "
                "symmetric where a collective runs on the copy engines"
            )

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


class RFactor:
    """The tensor `Tensor.rfactor` makes, as a view of the tensor it rFactors: its loop
    axes are that tensor's, and scheduling them schedules that tensor (see rfactor)."""

    def __init__(self, tensor: Tensor, rfactored: list[IterDomain]):
        self._tensor = tensor
        self._rfactored = rfactored

    def axis(self, index: int) -> _RFactoredAxis:
        return _RFactoredAxis(self._tensor.axis(index), self._rfactored)

    def set_device_mesh(self, mesh: DeviceMesh) -> None:
        tensor = self._tensor
        if tensor.device_mesh not in (None, mesh):
            raise FusionDefinitionError(f"{tensor.name}.rfactor(..): its mesh {mesh} differs from {tensor.name}'s {tensor.device_mesh}")
        tensor.set_device_mesh(mesh)

    def __getattr__(self, name: str) -> object:
        raise FusionDefinitionError(f"{self._tensor.name}.rfactor(..).{name} is not supported: schedule the rFactor "
                                    "with set_device_mesh and axis(i).parallelize")


class _RFactoredAxis:
    """A loop axis of an rFactor: a reduction piece left to the tensor rFactored becomes
    a partial per device when parallelized on a device type."""

    def __init__(self, piece: IterDomain, rfactored: list[IterDomain]):
        self._piece = piece
        self._rfactored = rfactored

    def parallelize(self, parallel_type: object) -> None:
        if self._piece in self._rfactored and _parallel_type(parallel_type).is_device:
            raise FusionDefinitionError("a device type on a piece the rFactor reduces is not supported; "
                                        "parallelize a piece left to the tensor rFactored")
        self._piece.parallelize(parallel_type)


# --------------------------------------------------------------------------- #
# The definition
# --------------------------------------------------------------------------- #

Location = FileLineColLoc
Builder = Callable[[Sequence[SSAValue], TensorType], Operation]
"""Builds an op from its operand values and result type."""

_OWN_FILES = (str(Path(__file__).resolve().parent), str(Path(__file__).resolve().parents[1] / "hostir"))
"""The frontend and the `hostir` package: a call inside them is not the user's."""


def _caller_location() -> Location | None:
    """The file, line and column of the innermost call outside hostir's own code (the
    user's `fd.ops.x(..)` line), as an op location."""
    frame: FrameType | None = sys._getframe(1)
    while frame is not None and frame.f_code.co_filename.startswith(_OWN_FILES):
        frame = frame.f_back
    if frame is None:
        return None
    positions = list(frame.f_code.co_positions())
    index = frame.f_lasti // 2  # one position per 2-byte code unit
    column = positions[index][2] if index < len(positions) else None
    return FileLineColLoc(StringAttr(frame.f_code.co_filename), IntAttr(frame.f_lineno), IntAttr((column or 0) + 1))


@dataclass(eq=False)
class _Node:
    operands: list[_Value]
    build: Builder
    result: _Value
    location: Location | None = None
    """Where the user's code made the op: what a pass refusing it names."""


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
        self._extent_parent: list[int] = []
        """Union-find over the symbols of dynamic extents."""
        self._random_streams = 0
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
    def define_tensor(
        self,
        shape: Sequence[int],
        contiguity: bool | Sequence[bool | None] | None = None,
        dtype: object = DataType.Float,
        is_cpu: bool = False,
        stride_order: Sequence[int] | None = None,
    ) -> Tensor:
        """A fusion input, as nvFuser's `define_tensor(shape, contiguity, dtype, is_cpu,
        stride_order)`. -1 is a dynamic extent; extent 1 is a broadcast axis. The
        evaluator lays every input out densely itself, so `contiguity` is checked but
        changes nothing; `stride_order` (nvFuser's: entry i is the rank of axis i's
        stride, the largest outermost) is the allocation order."""
        self._check_open("define_tensor")
        axes = _extents("define_tensor", shape)
        _check_contiguity(contiguity, len(axes))
        if is_cpu is not False:
            raise FusionDefinitionError(
                "define_tensor: is_cpu=True (a CPU scalar input) is not supported; pass it on the program's device"
            )
        element_type = data_type(dtype).element_type
        tensor = Tensor(self, self._next_name("T"), element_type, axes)
        if stride_order:
            tensor.set_allocation_order(_allocation_order_of_strides("define_tensor", stride_order, len(axes)))
        self._inputs.append(tensor)
        self._revise()
        return tensor

    @property
    def fusion(self) -> FusionView:
        """nvFuser's `fd.fusion`: `inputs()` and `outputs()`."""
        return FusionView(self)

    def define_scalar(self, value: bool | int | float | None = None, dtype: object = None) -> Scalar:
        """A constant; dtype defaults as nvFuser's: bool -> Bool, int -> Int, float -> Double.
        nvFuser's scalar inputs (no value) are refused: a program's inputs are tensors."""
        self._check_open("define_scalar")
        if value is None:
            raise FusionDefinitionError("define_scalar without a value (a scalar input known at run time) is not "
                                        "supported; use a constant or a 0-D tensor input")
        if dtype is None:
            dtype = _default_scalar_type(value)
        try:
            scalar = Scalar(self, value, data_type(dtype))
        except FusionDefinitionError as error:
            raise FusionDefinitionError(f"define_scalar: {error.reason}") from None
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
        self._nodes.append(
            _Node([], lambda _operands, _type: arith.ConstantOp(scalar.attribute), scalar, _caller_location())
        )
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
        self._link_extents(build(placeholders, result_type), placeholders, operands, result)
        self._nodes.append(_Node(list(operands), build, result, _caller_location()))
        self._revise()
        return result

    # -- dynamic extents ------------------------------------------------------------
    def _new_extent_id(self) -> int:
        self._extent_parent.append(len(self._extent_parent))
        return len(self._extent_parent) - 1

    def _root(self, symbol: int) -> int:
        while self._extent_parent[symbol] != symbol:
            symbol = self._extent_parent[symbol]
        return symbol

    def _link_extents(self, op: Operation, placeholders: Sequence[SSAValue], operands: Sequence[_Value], result: Tensor) -> None:
        """Give the result's dynamic axes the symbols of the operand axes they keep the
        extent of, as nvFuser's exact mapping does."""
        for placeholder, operand in zip(placeholders, operands):
            if not isinstance(operand, Tensor):
                continue
            for source, target in _extent_keeping_axes(op, placeholder).items():
                ids = operand._extent_ids[source], result._extent_ids[target]
                if None not in ids:
                    self._extent_parent[self._root(ids[1])] = self._root(ids[0])  # type: ignore[arg-type]

    def _equate_extents(self, a: Tensor, a_axis: int, b: Tensor, b_axis: int) -> None:
        """Two value axes the definition says have one extent."""
        x, y = a._extent_ids[a._value_axis(a_axis)], b._extent_ids[b._value_axis(b_axis)]
        if x is not None and y is not None:
            self._extent_parent[self._root(x)] = self._root(y)

    def _same_extent(self, a: Tensor, a_axis: int, b: Tensor, b_axis: int) -> bool:
        """Are two value axes known to have one extent?"""
        x, y = a._extent_ids[a._value_axis(a_axis)], b._extent_ids[b._value_axis(b_axis)]
        if x is None or y is None:
            return x is None and y is None and a.shape[a_axis] == b.shape[b_axis]
        return self._root(x) == self._root(y)

    def _static_extent(self, value: object, what: str) -> int:
        """An extent given as an int, a constant integer Scalar, or -1."""
        if isinstance(value, Scalar) and value.dtype.is_integer:
            value = value.value
        if isinstance(value, Extent):
            raise FusionDefinitionError(f"{what}: {value!r} is known only at run time; this shape needs static extents")
        if not _is_int(value):
            raise FusionDefinitionError(f"{what}: an extent must be an int or an integer Scalar, got {value!r}")
        return value  # type: ignore[return-value]

    def _shape_entry(self, value: object, what: str) -> int | Extent:
        """An entry of a target shape: a static extent, or an `Extent` of this definition."""
        if isinstance(value, Extent):
            self._check_own(value.tensor, what)
            return value
        return self._static_extent(value, what)

    def _slice_bound(self, t: Tensor, axis: int, value: object, what: str) -> int:
        """A slice bound: static, or the axis's own extent (to its end)."""
        if not isinstance(value, Extent):
            return self._static_extent(value, what)
        self._check_own(value.tensor, what)
        if axis < t.ndim and self._same_extent(t, axis, value.tensor, value.axis):
            return fusion.SLICE_TO_END
        raise FusionDefinitionError(
            f"{what}: bound {value!r} of axis {axis} of {t.name} is not known to be that axis's extent; "
            "hostir slices to static bounds or to the end of an axis"
        )

    def _next_random_stream(self) -> int:
        """A number for each random op, so that ops drawing without a seed draw apart."""
        self._random_streams += 1
        return self._random_streams - 1

    # -- emission ---------------------------------------------------------------------
    def to_module(self, every_value: bool = False) -> ModuleOp:
        """A verified `builtin.module` holding one `fusion.func` with the current schedule,
        of the ops the outputs need (`_live_nodes`); with `every_value`, of every op
        defined, as a textual program may hold values no output needs (the differential
        tests lower those, so that the passes stay tested on them)."""
        nodes = self._nodes if every_value else self._live_nodes()
        types = {v: v.type for v in self._inputs + [n.result for n in nodes]}  # checks schedules
        func = fusion.FuncOp(self.name, [types[t] for t in self._inputs], [types[t] for t in self._outputs])
        values: dict[_Value, SSAValue] = {}
        for tensor, arg in zip(self._inputs, func.args):
            arg.name_hint = tensor.name
            values[tensor] = arg
        for node in nodes:
            # A scalar's node builds its constant and ignores the type.
            op = node.build([values[o] for o in node.operands], cast(TensorType, types[node.result]))
            if node.location is not None:
                op.location = node.location
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

    def _live_nodes(self) -> list[_Node]:
        """The nodes the outputs depend on, in definition order. As in nvFuser, a value no
        output needs is not part of the fusion: neither it nor its schedule is lowered
        (random ops draw apart by the stream numbers they got when defined, so leaving
        one out changes no other's numbers)."""
        needed: set[_Value] = set(self._outputs)
        live = []
        for node in reversed(self._nodes):
            if node.result in needed:
                live.append(node)
                needed.update(node.operands)
        return live[::-1]

    def __str__(self) -> str:
        return str(self.to_module())


def _extents(what: str, shape: object) -> list[AxisShape]:
    if not _is_list(shape) or not all(_is_int(e) and DYNAMIC <= e <= INT64_MAX for e in shape):
        raise FusionDefinitionError(
            f"{what}: shape must be a list of extents >= 0 (or -1 for dynamic) that fit in 64 bits, got {shape!r}"
        )
    return [_axis_shape(e) for e in shape]


def _extent_keeping_axes(op: Operation, operand: SSAValue) -> dict[int, int]:
    """Logical axes of `operand` -> the result axes of the same extent: the axis map, but
    for a reshape only its groups of one axis each side and for a slice only the axes it
    keeps whole."""
    positions = tensor_type(operand).value_positions()
    if isinstance(op, fusion.ReshapeOp):
        return {positions[s[0]]: t[0] for s, t in op.groups() if len(s) == len(t) == 1}
    if isinstance(op, fusion.SliceOp):
        return {positions[k]: k for k in op.whole_axes()}
    return op.axis_map(operand)  # type: ignore[attr-defined]


def _check_contiguity(contiguity: object, rank: int) -> None:
    """nvFuser's contiguity: None, one bool, or one bool per axis (None for a broadcast one)."""
    if contiguity is None or isinstance(contiguity, bool):
        return
    if not _is_list(contiguity) or len(contiguity) != rank or not all(c is None or isinstance(c, bool) for c in contiguity):
        raise FusionDefinitionError(
            f"define_tensor: contiguity must be a bool or one bool (or None) per axis, got {contiguity!r}"
        )


def _allocation_order_of_strides(what: str, stride_order: object, rank: int) -> list[int]:
    """Logical axes from the largest stride to the smallest, from nvFuser's stride order
    (entry i: the rank of axis i's stride among all, 0 the innermost)."""
    order = _ints(what, stride_order, "stride_order")
    if sorted(order) != list(range(rank)):
        raise FusionDefinitionError(f"{what}: stride_order {order} is not a permutation of {rank} axes")
    return sorted(range(rank), key=lambda axis: -order[axis])


class FusionView:
    """nvFuser's `fd.fusion`: the definition's inputs and outputs."""

    def __init__(self, fd: FusionDefinition):
        self._fd = fd

    @property
    def definition(self) -> FusionDefinition:
        return self._fd

    def inputs(self) -> list[Tensor]:
        return list(self._fd._inputs)

    def outputs(self) -> list[Tensor]:
        return list(self._fd._outputs)


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


def _constant_attribute(value: object, dtype: DataType) -> IntegerAttr | FloatAttr:
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
    """`fd.ops`: every fusion op, named and called as in nvFuser's Python frontend, with
    its type promotion: operands of different element types are cast to a common one,
    half-precision floats compute in float32, and ops of scalars alone are folded."""

    def __init__(self, fd: FusionDefinition):
        self._fd = fd

    def __getattr__(self, name: str) -> object:
        """An nvFuser op hostir does not have: a FusionDefinitionError naming it."""
        if name.startswith("_"):
            raise AttributeError(name)
        raise FusionDefinitionError(f"fd.ops.{name} is not supported (docs/nvfuser_parity.md lists nvFuser's ops and hostir's)")

    def _tensor(self, value: object, what: str) -> Tensor:
        return self._fd._check_tensor(value, what)

    def _unary(self, op: type[fusion.UnaryComputeOp], what: str, t: object, element_type: Attribute | None = None) -> Tensor:
        t = self._tensor(t, what)
        return self._fd._define(what, [t], lambda v, r: op(v[0], r), element_type or t.element_type)

    def set(self, t: Tensor) -> Tensor:
        return self._unary(fusion.SetOp, "fd.ops.set", t)

    def cast(self, t: Tensor, dtype: object) -> Tensor:
        return self._unary(fusion.CastOp, "fd.ops.cast", t, data_type(dtype).element_type)

    def _cast_to(self, value: Tensor | Scalar, dtype: DataType, what: str) -> Tensor | Scalar:
        """A tensor operand cast to `dtype` where it has another type (nvFuser's
        promoteValues); scalars keep theirs, as the ops take scalars of a lower kind."""
        return self._cast_tensor(value, dtype, what) if isinstance(value, Tensor) else value

    def _cast_tensor(self, t: Tensor, dtype: DataType, what: str) -> Tensor:
        return t if t.dtype == dtype else self._unary(fusion.CastOp, what, t, dtype.element_type)

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

    def _elementwise(self, function: str, operands: Sequence[object], promotion: _Promotion) -> _Value:
        """`function` (a unary or binary function of the dialect) of promoted operands, or
        a Scalar folded from scalar operands."""
        what = f"fd.ops.{function}"
        values = [self._operand(x, what) for x in operands]
        common = _promoted_type(values, promotion, what)
        scalars = [v for v in values if isinstance(v, Scalar)]
        if len(scalars) == len(values):
            return self._folded(function, scalars, common, what)
        values = [self._cast_to(v, common, what) for v in self._broadcasting(values)]
        if function in fusion.UNARY_OPS:
            op = fusion.UNARY_OPS[function]
            return self._fd._define(what, values, lambda v, r: op(v[0], r), common.element_type)
        binary = fusion.BINARY_OPS[function]
        result_type = binary.result_element_type(common.element_type)
        return self._fd._define(what, values, lambda v, r: binary(v[0], v[1], r), result_type)

    def _operand(self, value: object, what: str) -> Tensor | Scalar:
        """A Tensor or Scalar as is; a Python number becomes a constant of nvFuser's type
        for it (bool -> Bool, int -> Int, float -> Double)."""
        if isinstance(value, (Tensor, Scalar)):
            self._fd._check_own(value, what)
            return value
        if isinstance(value, (bool, int, float)):
            try:
                return Scalar(self._fd, value, _default_scalar_type(value))
            except FusionDefinitionError as error:
                raise FusionDefinitionError(f"{what}: {error.reason}") from None
        raise FusionDefinitionError(f"{what}: operand {value!r} is neither a Tensor, a Scalar nor a number")

    def _folded(self, function: str, values: Sequence[Scalar], dtype: DataType, what: str) -> Scalar:
        """The constant an op of constants computes (nvFuser evaluates scalar ops on the
        host, in double for floats)."""
        numbers = [v.value for v in values]
        try:
            result = _SCALAR_FUNCTIONS[function](*numbers)
        except (ArithmeticError, ValueError) as error:
            raise FusionDefinitionError(f"{what}: {error} for scalars {numbers}") from None
        if function in fusion.COMPARISON_OPS:
            dtype = DataType.Bool
        elif dtype.is_integer:
            result = int(result)
        scalar = Scalar(self._fd, result, dtype)
        self._fd._record_constant(scalar)
        return scalar

    def _reduce(self, kind: fusion.ReduceKind, t: Tensor, dims: object, keepdim: bool, dtype: object = DataType.Null) -> Tensor:
        what = f"fd.ops.{kind}"
        t = self._tensor(t, what)
        if not isinstance(keepdim, bool):
            raise FusionDefinitionError(f"{what}: keepdim must be a bool, got {keepdim!r}")
        dims = list(range(t.ndim)) if dims is None else _ints(what, dims)
        target = data_type(dtype)
        if target == DataType.Null and kind in (fusion.ReduceKind.SUM, fusion.ReduceKind.PROD) and not t.dtype.is_float:
            target = DataType.Int  # nvFuser sums integers and predicates into Int
        if target != DataType.Null:
            t = self._cast_tensor(t, target, what)
        result = self._fd._define(what, [t], lambda v, r: fusion.ReduceOp(kind, v[0], dims, r), t.element_type)
        return self._keep_dims(result, t, dims, keepdim)

    def _keep_dims(self, result: Tensor, source: Tensor, dims: Sequence[int], keepdim: bool) -> Tensor:
        if not keepdim:
            return result
        kept = {d % source.ndim for d in dims}
        return self.broadcast(result, [i in kept for i in range(source.ndim)])

    def sum(self, arg: Tensor, dims: object = None, keepdim: bool = False, dtype: object = DataType.Null) -> Tensor:
        """nvFuser's sum: `dtype` casts first; integers and predicates sum into Int."""
        return self._reduce(fusion.ReduceKind.SUM, arg, dims, keepdim, dtype)

    def prod(self, arg: Tensor, dims: object = None, keepdim: bool = False, dtype: object = DataType.Null) -> Tensor:
        return self._reduce(fusion.ReduceKind.PROD, arg, dims, keepdim, dtype)

    def max(self, arg: Tensor, dims: object = None, keepdim: bool = False, dtype: object = DataType.Null) -> Tensor:
        return self._reduce(fusion.ReduceKind.MAX, arg, dims, keepdim, dtype)

    def min(self, arg: Tensor, dims: object = None, keepdim: bool = False, dtype: object = DataType.Null) -> Tensor:
        return self._reduce(fusion.ReduceKind.MIN, arg, dims, keepdim, dtype)

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

    def squeeze(self, t: Tensor, dims: Sequence[int], squeeze_expanded: bool = False) -> Tensor:
        t = self._tensor(t, "fd.ops.squeeze")
        dims = _ints("fd.ops.squeeze", dims)
        return self._fd._define("fd.ops.squeeze", [t], lambda v, r: fusion.SqueezeOp(v[0], dims, r), t.element_type)

    def reshape(self, t: Tensor, new_shape: Sequence[int]) -> Tensor:
        """Reshape to `new_shape`; one -1 is inferred from a static input, else dynamic."""
        what = "fd.ops.reshape"
        t = self._tensor(t, what)
        axes = _extents(what, [self._fd._static_extent(e, what) for e in new_shape] if _is_list(new_shape) else new_shape)
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
        manual_normalization: bool = False,
    ) -> Tensor:
        """nvFuser's slice. Bounds may be `fd.ops.size` extents: the axis's own extent
        slices to its end. Without `manual_normalization`, negative bounds count from the
        end and bounds past the end are clamped to it, as in Python."""
        what = "fd.ops.slice"
        t = self._tensor(t, what)
        if not _is_list(start_indices) or not _is_list(end_indices) or len(start_indices) != len(end_indices):
            raise FusionDefinitionError(f"{what}: start_indices and end_indices need one entry per axis, got "
                                        f"{start_indices!r} and {end_indices!r}")
        steps = [1] * len(start_indices) if strides is None else _ints(what, strides, "strides")
        starts, stops = [], []
        for axis, (start, stop) in enumerate(zip(start_indices, end_indices)):
            extent = t.shape[axis] if axis < t.ndim else DYNAMIC
            start, stop = self._fd._slice_bound(t, axis, start, what), self._fd._slice_bound(t, axis, stop, what)
            if not manual_normalization and extent != DYNAMIC:
                start, stop = (_normalized_bound(b, extent) for b in (start, stop))
            starts.append(start)
            stops.append(stop)

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
        if not isinstance(dim, int) or isinstance(dim, bool):
            raise FusionDefinitionError(f"{what}: dim must be an int, got {dim!r}")
        if -t.ndim <= dim < t.ndim:
            extent = t.shape[dim]
            if value < 0 or (extent != DYNAMIC and value >= extent):
                raise FusionDefinitionError(f"{what}: index {value} is out of range for axis {dim} of extent {extent}")

        def build(v: Sequence[SSAValue], r: Attribute) -> Operation:
            return fusion.SelectOp(v[0], v[1], dim, r)  # type: ignore[arg-type]  # r: the TensorType _define passes

        return self._fd._define(what, [t, index], build, t.element_type)

    # -- nvFuser's ops of the multi-device tests -------------------------------------
    def size(self, arg: Tensor, dim: int) -> int | Extent:
        """The extent of axis `dim` of the value: an int when static, else an `Extent`
        standing for it in shapes and slice bounds."""
        arg = self._tensor(arg, "fd.ops.size")
        if not isinstance(dim, int) or isinstance(dim, bool) or not -arg.ndim <= dim < arg.ndim:
            raise FusionDefinitionError(f"fd.ops.size: dim {dim!r} is out of range for {arg.name} of rank {arg.ndim}")
        extent = arg.shape[dim]
        return Extent(arg, dim % arg.ndim) if extent == DYNAMIC else extent

    def shape(self, arg: Tensor) -> list[int | Extent]:
        """The extents of every axis of the value (see `size`)."""
        arg = self._tensor(arg, "fd.ops.shape")
        return [self.size(arg, i) for i in range(arg.ndim)]

    def broadcast_in_dim(self, arg: Tensor, shape: Sequence[object], broadcast_dims: Sequence[int]) -> Tensor:
        """nvFuser's broadcast_in_dim: axis i of `arg` becomes axis broadcast_dims[i] of a
        tensor of `shape`; the others are new, and every axis of extent 1 of `arg` or new
        expands to `shape`'s extent (fusion.broadcast, then fusion.expand)."""
        what = "fd.ops.broadcast_in_dim"
        arg = self._tensor(arg, what)
        if not _is_list(shape):
            raise FusionDefinitionError(f"{what}: shape must be a list, got {shape!r}")
        rank = len(shape)
        dims = [d % rank if _is_int(d) and -rank <= d < rank else d for d in _ints(what, broadcast_dims, "broadcast_dims")]
        if len(dims) != arg.ndim or sorted(set(dims)) != sorted(dims) or not all(_is_int(d) and 0 <= d < rank for d in dims):
            raise FusionDefinitionError(
                f"{what}: broadcast_dims needs one distinct output axis in [0, {rank}) per axis of {arg.name} "
                f"({arg.ndim}), got {list(broadcast_dims)}"
            )
        if dims != sorted(dims):
            raise FusionDefinitionError(f"{what}: broadcast_dims {dims} must keep the axes in order")
        flags = [i not in dims for i in range(rank)]
        broadcast = self.broadcast(arg, flags) if any(flags) else arg
        return self._expanded(what, broadcast, shape)

    def expand(self, arg: Tensor, shape: Sequence[object]) -> Tensor:
        """nvFuser's expand: every axis of extent 1 takes `shape`'s extent (-1 keeps one)."""
        what = "fd.ops.expand"
        arg = self._tensor(arg, what)
        if not _is_list(shape) or len(shape) != arg.ndim:
            raise FusionDefinitionError(f"{what}: shape needs one extent per axis of {arg.name} ({arg.ndim}), got {shape!r}")
        return self._expanded(what, arg, shape)

    def _expanded(self, what: str, t: Tensor, shape: Sequence[object]) -> Tensor:
        """`t` expanded to `shape` where its axes have extent 1 (a view; `t` itself when
        nothing expands). An `Extent` of another tensor is read from that tensor."""
        result_axes: list[AxisShape] = []
        like: Tensor | None = None
        sources: list[int] = []
        for axis, (extent, entry) in enumerate(zip(t.shape, shape)):
            target = self._fd._shape_entry(entry, what)
            if extent != 1 or target in (-1, 1):
                if _is_int(target) and target not in (-1, extent) and extent != DYNAMIC:
                    raise FusionDefinitionError(f"{what}: axis {axis} has extent {extent}, which cannot become {target}")
                if isinstance(target, Extent):  # nvFuser checks the two are equal when it runs
                    self._fd._equate_extents(t, axis, target.tensor, target.axis)
                result_axes.append((extent, t._axes[t._value_axis(axis)].kind))
                sources.append(-1)
            elif isinstance(target, Extent):
                if like not in (None, target.tensor):
                    raise FusionDefinitionError(f"{what}: the extents of {shape!r} come from several tensors; "
                                                "hostir expands to the extents of one")
                like = target.tensor
                result_axes.append((DYNAMIC, IterKind.ITERATION))
                sources.append(target.axis)
            else:
                result_axes.append(_axis_shape(target))
                sources.append(-1)
        if all(s == -1 for s in sources) and [e for e, _ in result_axes] == list(t.shape):
            return t
        operands: list[_Value] = [t] if like is None else [t, like]

        def build(v: Sequence[SSAValue], r: Attribute) -> Operation:
            if like is None:
                return fusion.ExpandOp(v[0], r)  # type: ignore[arg-type]
            return fusion.ExpandOp(v[0], r, v[1], sources)  # type: ignore[arg-type]

        expanded = self._fd._define(what, operands, build, t.element_type, result_axes=result_axes)
        expanded._unexpanded = t
        return expanded

    def _broadcasting(self, values: list[Tensor | Scalar]) -> list[Tensor | Scalar]:
        """Operands of an elementwise op: an expanded tensor whose expanded extent differs
        from another operand's is read unexpanded, so its axis broadcasts to that extent
        (as nvFuser broadcasts an expanded broadcast axis)."""
        tensors = [v for v in values if isinstance(v, Tensor)]

        def clashes(v: Tensor) -> bool:
            return any(
                len(o.shape) == len(v.shape) and any(a not in (b, 1, DYNAMIC) and b not in (1, DYNAMIC)
                                                     for a, b in zip(v.shape, o.shape))
                for o in tensors if o is not v
            )

        return [v._unexpanded if isinstance(v, Tensor) and v._unexpanded is not None and clashes(v) else v
                for v in values]

    def stride_order(self, arg: Tensor, stride_order: Sequence[int]) -> Tensor:
        """nvFuser's stride_order: a copy laid out in `stride_order` (see define_tensor)."""
        result = self.set(arg)
        if stride_order:
            result.set_allocation_order(_allocation_order_of_strides("fd.ops.stride_order", stride_order, result.ndim))
        return result

    def cat(self, tensors: Sequence[Tensor], dim: int = 0, manual_padding: bool = False) -> Tensor:
        """Concatenate along `dim` (nvFuser's cat; `manual_padding`, nvFuser's promise that
        the inputs are already padded, is refused)."""
        what = "fd.ops.cat"
        if manual_padding:
            raise FusionDefinitionError(f"{what}: manual_padding=True (inputs padded by the caller) is not supported")
        if not _is_list(tensors) or not tensors:
            raise FusionDefinitionError(f"{what}: tensors must be a non-empty list of Tensors, got {tensors!r}")
        values = [self._tensor(t, what) for t in tensors]
        common = _promoted_type(values, _Promotion.NONE, what)
        values = [self._cast_tensor(t, common, what) for t in values]
        return self._fd._define(what, values, lambda v, r: fusion.CatOp(list(v), dim, r), common.element_type)

    def where(self, pred: object, a: object, b: object) -> Tensor:
        """`pred ? a : b`, elementwise: `pred` of Bool, `a` and `b` promoted to a common type
        (half precision kept, as nvFuser's where does)."""
        what = "fd.ops.where"
        condition = self._operand(pred, what)
        values = [self._operand(x, what) for x in (a, b)]
        if not any(isinstance(v, Tensor) for v in (condition, *values)):
            raise FusionDefinitionError(f"{what}: at least one operand must be a Tensor")
        if condition.dtype != DataType.Bool:
            raise FusionDefinitionError(f"{what}: the condition must be of DataType.Bool, got {condition.dtype.value}")
        common = _promoted_type(values, _Promotion.NONE, what)
        condition, *values = self._broadcasting([condition, *values])
        values = [self._cast_to(v, common, what) for v in values]

        def build(v: Sequence[SSAValue], r: Attribute) -> Operation:
            return fusion.WhereOp(v[0], v[1], v[2], r)  # type: ignore[arg-type]

        return self._fd._define(what, [condition, *values], build, common.element_type)

    def iota(self, length: object, start: object = None, step: object = None, dtype: object = DataType.Int) -> Tensor:
        """[start, start + step, ..] of `length` elements (nvFuser's iota; start 0 and step 1
        by default)."""
        what = "fd.ops.iota"
        extent = self._fd._static_extent(length, what)
        bounds = [self._operand(default if given is None else given, what) for given, default in ((start, 0), (step, 1))]

        def build(v: Sequence[SSAValue], r: Attribute) -> Operation:
            return fusion.IotaOp(v[0], v[1], r)  # type: ignore[arg-type]

        return self._fd._define(what, bounds, build, data_type(dtype).element_type, result_axes=[_axis_shape(extent)])

    def triu(self, arg: Tensor, diagonal: int = 0) -> Tensor:
        """The upper triangle of the last two axes (torch.triu)."""
        what = "fd.ops.triu"
        arg = self._tensor(arg, what)
        if not _is_int(diagonal):
            raise FusionDefinitionError(f"{what}: diagonal must be an int, got {diagonal!r}")
        return self._fd._define(what, [arg], lambda v, r: fusion.TriuOp(v[0], diagonal, r), arg.element_type)

    def _statistic(self, what: str, arg: object, build_op: Callable, dims: object) -> tuple[Tensor, Tensor, list[int]]:
        """(input promoted as nvFuser's float ops, the reduction, its dims)."""
        t = self._tensor(arg, what)
        t = self._cast_tensor(t, _promoted_type([t], _Promotion.FLOAT, what), what)
        dims = list(range(t.ndim)) if dims is None else _ints(what, dims)
        return t, self._fd._define(what, [t], lambda v, r: build_op(v[0], dims, r), t.element_type), dims

    def mean(self, arg: Tensor, dims: object = None, keepdim: bool = False) -> Tensor:
        t, mean, dims = self._statistic("fd.ops.mean", arg, fusion.MeanOp, dims)
        return self._keep_dims(mean, t, dims, keepdim)

    def var(self, arg: Tensor, dims: object = None, correction: int = 1, keepdim: bool = False) -> Tensor:
        if not _is_int(correction) or correction < 0:
            raise FusionDefinitionError(f"fd.ops.var: correction must be an int >= 0, got {correction!r}")
        t, var, dims = self._statistic(
            "fd.ops.var", arg, lambda x, d, r: fusion.VarOp(x, d, correction, r), dims
        )
        return self._keep_dims(var, t, dims, keepdim)

    def var_mean(self, arg: Tensor, dims: object = None, correction: int = 1, keepdim: bool = False) -> tuple[Tensor, Tensor]:
        """nvFuser's var_mean: (variance with `correction`, mean) over `dims`."""
        return self.var(arg, dims, correction, keepdim), self.mean(arg, dims, keepdim)

    def uniform(self, minval: object, maxval: object, shape: Sequence[object], *, rng_seed: object = None,
                rng_offset: object = None, dtype: object = DataType.Float) -> Tensor:
        """Numbers uniform in [minval, maxval) (nvFuser's uniform). With `rng_seed` and
        `rng_offset` the numbers are those of that seed and offset, at their positions in
        the tensor, on every layout; without, each run draws new ones (see fusion.uniform)."""
        what = "fd.ops.uniform"
        if (rng_seed is None) != (rng_offset is None):
            raise FusionDefinitionError(f"{what}: give rng_seed and rng_offset together, or neither")
        bounds = [self._operand(x, what) for x in (minval, maxval)]
        seeds = [] if rng_seed is None else [self._operand(x, what) for x in (rng_seed, rng_offset)]
        axes = _extents(what, [self._fd._static_extent(e, what) for e in shape] if _is_list(shape) else shape)
        stream = self._fd._next_random_stream()

        def build(v: Sequence[SSAValue], r: Attribute) -> Operation:
            seed, offset = (v[2], v[3]) if len(v) > 2 else (None, None)
            return fusion.UniformOp(v[0], v[1], r, stream, seed, offset)  # type: ignore[arg-type]

        element_type = data_type(dtype).element_type
        return self._fd._define(what, [*bounds, *seeds], build, element_type, result_axes=axes)

    def grouped_mm(self, mat1: Tensor, mat2: Tensor, offsets: Tensor) -> Tensor:
        """nvFuser's grouped_mm: [M, K] x [G, K, N] (M in groups), [G, M, K] x [K, N] (N in
        groups) or [M, K] x [K, N] (K in groups, result [G, M, N]); `offsets` [G] holds where
        each group ends, at run time."""
        what = "fd.ops.grouped_mm"
        a, b, offsets = (self._tensor(x, what) for x in (mat1, mat2, offsets))
        grouping = {(2, 3): fusion.Grouping.M, (3, 2): fusion.Grouping.N, (2, 2): fusion.Grouping.K}.get((a.ndim, b.ndim))
        if grouping is None:
            raise FusionDefinitionError(f"{what}: operand ranks {a.ndim} and {b.ndim}; use 2 and 3, 3 and 2, or 2 and 2 "
                                        "(two 3-D operands are a batched matmul)")

        def build(v: Sequence[SSAValue], r: Attribute) -> Operation:
            return fusion.GroupedMmOp(v[0], v[1], v[2], grouping, r)  # type: ignore[arg-type]

        return self._fd._define(what, [a, b, offsets], build, a.element_type)

    def sdpfa_fwd(self, query: Tensor, key: Tensor, value: Tensor, bias: object = None, mask: object = None,
                  dropout_p: object = None, is_causal: object = None, scale: object = None) -> tuple[Tensor, ...]:
        """nvFuser's sdpfa_fwd: (output, logsumexp, philox seed, philox offset). The seed and
        offset are this run's random state (fusion.rng_seed), which sdpfa_bwd takes to
        replay the dropout."""
        what = "fd.ops.sdpfa_fwd"
        if bias is not None or mask is not None:
            raise FusionDefinitionError(f"{what}: an attention bias or mask is not supported; use is_causal")
        q, k, v = (self._tensor(x, what) for x in (query, key, value))
        attributes = self._attention_attributes(what, dropout_p, is_causal, scale)
        seed, offset = self._random_state(what)
        outputs = []
        for kind in fusion.AttentionOutput:
            element_type = Float32Type() if kind == fusion.AttentionOutput.LOGSUMEXP else q.element_type

            def build(x: Sequence[SSAValue], r: Attribute, kind=kind) -> Operation:
                q, k, v, seed, offset = x
                return fusion.SdpfaFwdOp(kind, q, k, v, seed, offset, *attributes, r)  # type: ignore[arg-type]  # r: the result's TensorType

            outputs.append(self._fd._define(what, [q, k, v, seed, offset], build, element_type))
        outputs[0]._follow_layout(q)  # nvFuser's attention output is laid out as its query
        return outputs[0], outputs[1], seed, offset

    def sdpfa_bwd(self, grad_output: Tensor, query: Tensor, key: Tensor, value: Tensor, output: Tensor,
                  logsumexp: Tensor, dropout_p: object, is_causal: object, philox_seed: Tensor,
                  philox_offset: Tensor, scale: object = None) -> tuple[Tensor, Tensor, Tensor]:
        """nvFuser's sdpfa_bwd: (grad_query, grad_key, grad_value), each laid out as its input."""
        what = "fd.ops.sdpfa_bwd"
        operands = [self._tensor(x, what) for x in (grad_output, query, key, value, output, logsumexp, philox_seed,
                                                     philox_offset)]
        attributes = self._attention_attributes(what, dropout_p, is_causal, scale)
        gradients = []
        for kind, source in zip(fusion.AttentionGradient, operands[1:4]):

            def build(x: Sequence[SSAValue], r: Attribute, kind=kind) -> Operation:
                grad, q, k, v, out, lse, seed, offset = x
                return fusion.SdpfaBwdOp(kind, grad, q, k, v, out, lse, seed, offset, *attributes, r)  # type: ignore[arg-type]  # r: the result's TensorType

            gradient = self._fd._define(what, operands, build, source.element_type)
            gradient._follow_layout(source)
            gradients.append(gradient)
        return gradients[0], gradients[1], gradients[2]

    def _attention_attributes(self, what: str, dropout_p: object, is_causal: object,
                              scale: object) -> tuple[float, bool, float | None]:
        """(dropout_p, is_causal, scale) as constants (None: 0, False, 1/sqrt(E))."""
        dropout = 0.0 if dropout_p is None else self._constant(what, dropout_p, "dropout_p", (int, float))
        causal = False if is_causal is None else self._constant(what, is_causal, "is_causal", (bool,))
        factor = None if scale is None else float(self._constant(what, scale, "scale", (int, float)))
        return float(dropout), bool(causal), factor

    def _constant(self, what: str, value: object, name: str, kinds: tuple[type, ...]) -> bool | int | float:
        """A Python constant, or the value of a constant Scalar."""
        if isinstance(value, Scalar):
            value = value.value
        if not isinstance(value, kinds) or (bool not in kinds and isinstance(value, bool)):
            raise FusionDefinitionError(f"{what}: {name} must be a constant {' or '.join(k.__name__ for k in kinds)}, "
                                        f"got {value!r}")
        return cast(bool | int | float, value)  # one of `kinds`, all numbers

    def _random_state(self, what: str) -> tuple[Tensor, Tensor]:
        """This run's (seed, offset) tensors: fusion.rng_seed and its element 1."""
        stream = self._fd._next_random_stream()
        seed = self._fd._define(what, [], lambda v, r: fusion.RngSeedOp(stream, r), fusion.RNG_STATE_TYPE,
                                result_axes=[(2, IterKind.ITERATION)])
        return seed, self.select(seed, 1, 0)


class _Promotion(Enum):
    """nvFuser's type promotion configs (csrc/type_promotion.h)."""

    NONE = "none"
    """A common type, kept (cat)."""
    DEFAULT = "default"
    """A common type, half precision computed in float32 (add, neg, where, comparisons)."""
    FLOAT = "float"
    """As DEFAULT, integers and predicates in float32 too (exp, sqrt, ...)."""


def _promoted_type(values: Sequence[Tensor | Scalar], promotion: _Promotion, what: str) -> DataType:
    """The type nvFuser computes `values` in (computeTypes): the one they share, or
    torch's result type of tensors of rank > 0, then of rank 0, then of scalars (whose
    half precision counts as float32), by category (bool < integer < float)."""
    dtypes = {v.dtype for v in values}
    if len(dtypes) == 1:
        (common,) = dtypes
    else:
        ranked = [[v.dtype for v in values if isinstance(v, Tensor) and v.ndim > 0],
                  [v.dtype for v in values if isinstance(v, Tensor) and v.ndim == 0],
                  [_FULL_PRECISION.get(v.dtype, v.dtype) for v in values if not isinstance(v, Tensor)]]
        results = [_promote_all(group, what) for group in ranked]
        combined = _combine_categories(results[0], _combine_categories(results[1], results[2], what), what)
        assert combined is not None  # values of two or more types: some group has one
        common = combined
    if promotion == _Promotion.FLOAT and not common.is_float:
        common = DataType.Float
    if promotion != _Promotion.NONE:
        common = _FULL_PRECISION.get(common, common)
    return common


_FULL_PRECISION = {DataType.Half: DataType.Float, DataType.BFloat16: DataType.Float}

_CATEGORY = {DataType.Bool: 0, DataType.Int32: 1, DataType.Int: 1, DataType.UInt64: 1,
             DataType.Half: 2, DataType.BFloat16: 2, DataType.Float: 2, DataType.Double: 2}
_WIDTH = {DataType.Bool: 1, DataType.Int32: 32, DataType.Int: 64, DataType.UInt64: 64,
          DataType.Half: 16, DataType.BFloat16: 16, DataType.Float: 32, DataType.Double: 64}


def _promote(a: DataType, b: DataType, what: str) -> DataType:
    """torch.promote_types of two types."""
    if a == b:
        return a
    if _CATEGORY[a] != _CATEGORY[b]:
        return a if _CATEGORY[a] > _CATEGORY[b] else b
    if {a, b} == {DataType.Half, DataType.BFloat16}:
        return DataType.Float
    if DataType.UInt64 in (a, b):
        raise FusionDefinitionError(f"{what}: uint64 and {(b if a == DataType.UInt64 else a).value} have no common type; cast one")
    return a if _WIDTH[a] > _WIDTH[b] else b


def _promote_all(dtypes: Sequence[DataType], what: str) -> DataType | None:
    result = None
    for dtype in dtypes:
        result = dtype if result is None else _promote(result, dtype, what)
    return result


def _combine_categories(higher: DataType | None, lower: DataType | None, what: str) -> DataType | None:
    """nvFuser's combineCategories: the types of higher-ranked operands win, unless a
    lower-ranked one is of a higher category."""
    if higher is None:
        return lower
    if lower is None or higher.is_float:
        return higher
    if higher == DataType.Bool or lower.is_float:
        return _promote(higher, lower, what)
    return higher


def _normalized_bound(bound: int, extent: int) -> int:
    """A Python slice bound of an axis of `extent`: negative counts from the end, clamped."""
    if bound == fusion.SLICE_TO_END:
        return bound
    if bound < 0:
        bound += extent
    return min(max(bound, 0), extent)


def _sigmoid(x: float) -> float:
    return 1.0 / (1.0 + math.exp(-x))


_SCALAR_FUNCTIONS: dict[str, Callable[..., float | int | bool]] = {
    "neg": operator.neg, "abs": abs, "relu": lambda x: max(x, 0), "exp": math.exp, "log": math.log,
    "sqrt": math.sqrt, "rsqrt": lambda x: 1.0 / math.sqrt(x), "sin": math.sin, "cos": math.cos, "tanh": math.tanh,
    "sigmoid": _sigmoid, "reciprocal": lambda x: 1.0 / x, "silu": lambda x: x * _sigmoid(x),
    "add": operator.add, "sub": operator.sub, "mul": operator.mul,
    "div": lambda a, b: a / b if isinstance(a, float) or isinstance(b, float) else int(a / b),
    "maximum": max, "minimum": min, "pow": operator.pow,
    "eq": operator.eq, "ne": operator.ne, "lt": operator.lt, "le": operator.le, "gt": operator.gt, "ge": operator.ge,
}
"""What each elementwise function computes on Python numbers (integer division truncates)."""

_FLOAT_FUNCTIONS = frozenset(("exp", "log", "sqrt", "rsqrt", "sin", "cos", "tanh", "sigmoid", "reciprocal"))
"""nvFuser's float ops: integers are computed in float32 too."""
_KEPT_TYPE_FUNCTIONS = frozenset(("abs", "relu", "silu"))
"""nvFuser's unary ops without type promotion."""


def _add_elementwise_ops() -> None:
    """fd.ops.<f> for every unary and binary function of the dialect, with nvFuser's promotion."""
    for function in fusion.UNARY_OPS:
        promotion = (_Promotion.FLOAT if function in _FLOAT_FUNCTIONS
                     else _Promotion.NONE if function in _KEPT_TYPE_FUNCTIONS else _Promotion.DEFAULT)
        setattr(Ops, function, _unary_op(function, promotion))
    for function in fusion.BINARY_OPS:
        setattr(Ops, function, _binary_op(function))


def _unary_op(function: str, promotion: _Promotion) -> Callable[[Ops, object], _Value]:
    """fd.ops.<function>(t): its own closure, so that its only parameter is the operand."""

    def unary(self: Ops, t: object) -> _Value:
        return self._elementwise(function, [t], promotion)

    unary.__name__ = unary.__qualname__ = function
    unary.__doc__ = f"Elementwise {function} (fusion.{function}); of a Scalar, a Scalar."
    return unary


def _binary_op(function: str) -> Callable[[Ops, object, object], _Value]:
    """fd.ops.<function>(lhs, rhs): its own closure, so that its only parameters are the operands."""

    def binary(self: Ops, lhs: object, rhs: object) -> _Value:
        return self._elementwise(function, [lhs, rhs], _Promotion.DEFAULT)

    binary.__name__ = binary.__qualname__ = function
    binary.__doc__ = f"Elementwise {function} (fusion.{function}); numbers and Scalars allowed."
    return binary


_add_elementwise_ops()
