"""The tensor type shared by the `fusion` and `hir` dialects.

Textual form (element type first, as nvFuser prints `T0_float[...]`):

    !fusion.tensor<f32[8, 64]>                       two iteration axes
    !fusion.tensor<f32[?, r64]>                      dynamic extent; a reduction axis
    !fusion.tensor<f32[b1, 64]>                      a broadcast axis
    !fusion.tensor<f32[8 stream, 64]>                axis 0 pipelined over CUDA streams
    !fusion.tensor<f32[2 didx, 64], mesh=[0, 1]>     axis 0 sharded across devices 0 and 1
    !fusion.tensor<f32[64(2 didx, 32), 8], mesh=[0, 1]>
                                                     axis 0 outer-split by 2, outer part sharded
    !fusion.tensor<f32[2 didy, 2 didx, 8], mesh=[[0, 1], [2, 3]]>
    !fusion.tensor<f32[512 didx, 8], mesh=[0, ..., 511]>
                                                     devices 0 to 511 (see `Mesh`)
    !fusion.tensor<f32[2 didz, 2 didy, 2 didx], mesh=[[[0, 1], [2, 3]], [[4, 5], [6, 7]]]>
    !fusion.tensor<f32[8, 4(2 didx, 2), r8(2 didx, 4)], mesh=[0, 1]>
                                                     a partial sum per device, to be
                                                     reduce-scattered on axis 1
    !fusion.tensor<f32[8 stream, 64], alloc=[0 stream, 1]>
                                                     allocated one stream chunk at a time

Each logical axis owns its loop axes ("pieces"): an unsplit axis has one piece (its
extent is the axis extent), an outer-split axis lists its pieces outermost first. The
loop domain is the concatenation of all pieces in logical order; nvFuser's reordering of
loop axes is not modelled because nothing here generates kernels from loop order.

The allocation domain says how the local buffer is laid out: `alloc=[...]` lists the
logical axes in allocation (major-to-minor) order. Device-parallel pieces are always
sharded in the allocation; the stream piece is only if its axis carries the `stream`
marker in `alloc` (see finalize-multidevice-domains). Reduction axes are never allocated.

`TensorType` is the one query surface: `local_shape`, `stream_axis`, `is_sharded`,
`value_shape`, `allocation_order`, ... are its methods. `TensorDesc` is its parameter
data, with the verifier's `problems()` and nothing else; `tensor_type(value)` is the
typed accessor for an SSA value's type.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, replace

from xdsl.dialects.builtin import (
    BFloat16Type,
    Float16Type,
    Float32Type,
    Float64Type,
    IntegerType,
    Signedness,
)
from xdsl.ir import Attribute, Data, SSAValue, TypeAttribute
from xdsl.irdl import irdl_attr_definition
from xdsl.parser import AttrParser
from xdsl.printer import Printer
from xdsl.utils.exceptions import VerifyException
from xdsl.utils.lexer import Span
from xdsl.utils.mlir_lexer import MLIRTokenKind
from xdsl.utils.str_enum import StrEnum

from .parsing import next_token, skip_to, source_text, token_at

DYNAMIC = -1
"""Extent of an axis whose size is only known at run time (printed `?`)."""


class IterKind(StrEnum):
    ITERATION = "i"
    REDUCTION = "r"
    BROADCAST = "b"


class ParallelKind(StrEnum):
    """How a loop axis is parallelized, spelled as in the IR (`2 didx`). The frontend's
    nvFuser-spelled `ParallelType.DIDx` names these members."""

    SERIAL = "serial"
    STREAM = "stream"
    DIDX = "didx"
    DIDY = "didy"
    DIDZ = "didz"

    @property
    def is_device(self) -> bool:
        return self in DEVICE_KINDS


DEVICE_KINDS = (ParallelKind.DIDX, ParallelKind.DIDY, ParallelKind.DIDZ)
"""Innermost mesh axis first: DIDx is the last axis of a mesh, DIDy the one before, DIDz
the one before that (nvFuser's mesh_x, mesh_y, mesh_z)."""

MAX_MESH_DIMENSIONS = len(DEVICE_KINDS)


@dataclass(frozen=True)
class Piece:
    """One loop axis: a whole logical axis, or one part of an outer split of it."""

    extent: int
    parallel: ParallelKind = ParallelKind.SERIAL


@dataclass(frozen=True)
class Axis:
    """One logical axis with its loop pieces, outermost first."""

    extent: int
    kind: IterKind = IterKind.ITERATION
    pieces: tuple[Piece, ...] = ()

    def __post_init__(self) -> None:
        if not self.pieces:
            object.__setattr__(self, "pieces", (Piece(self.extent),))

    @property
    def is_split(self) -> bool:
        return len(self.pieces) > 1

    @property
    def split_factor(self) -> int:
        """What the extent must be a multiple of: the product of the outer pieces'
        extents, or of every static piece where an outer one is dynamic (an inner split);
        1 for an axis that is not split."""
        if any(p.extent == DYNAMIC for p in self.pieces[:-1]):
            return math.prod(p.extent for p in self.pieces if p.extent != DYNAMIC)
        return math.prod(p.extent for p in self.pieces[:-1])

    @property
    def is_reduction(self) -> bool:
        return self.kind == IterKind.REDUCTION

    @property
    def is_broadcast(self) -> bool:
        return self.kind == IterKind.BROADCAST

    def parallel_types(self) -> set[ParallelKind]:
        return {p.parallel for p in self.pieces} - {ParallelKind.SERIAL}

    def with_kind(self, kind: IterKind) -> Axis:
        return replace(self, kind=kind)

    def unparallelized(self) -> Axis:
        return Axis(self.extent, self.kind)

    def narrowed(self, parts: int) -> Axis:
        """Block i of `parts` equal blocks of the axis (a stream chunk that keeps it): a
        whole axis of extent/parts, or, where devices share the axis inside its outer piece
        (`(S stream, D didx, m)`, the sequence-parallel spelling), the same pieces with the
        outer one divided by `parts` (each device's part of a block is a block of its part)."""
        extent = DYNAMIC if self.extent == DYNAMIC else self.extent // parts
        outer, *inner = self.pieces
        if not any(p.parallel.is_device for p in inner):
            return Axis(extent, self.kind)
        left = (Piece(outer.extent // parts),) if outer.extent > parts else ()
        return Axis(extent, self.kind, (*left, *inner))

    def narrowing_problem(self, parts: int) -> str | None:
        """Why block i of `parts` of the axis is not block i of each device's part of it
        (None: it is): an axis whose outer piece is sharded, or that devices share inside
        an outer piece `parts` does not divide."""
        outer, *inner = self.pieces
        if outer.parallel.is_device:
            return "is sharded across devices"
        if any(p.parallel.is_device for p in inner) and (outer.extent == DYNAMIC or outer.extent % parts):
            return f"is shared by devices inside an outer piece that {parts} parts do not divide"
        return None

    def with_serial(self, kinds: set[ParallelKind]) -> Axis:
        """The axis with its pieces of `kinds` made serial, adjacent serial pieces merged
        (a split's pieces are laid out outermost first); a whole axis where no piece is
        left parallel: `(2 stream, 2 didx, 4)` without DIDx is `(2 stream, 8)`."""
        pieces: list[Piece] = []
        for piece in self.pieces:
            piece = Piece(piece.extent) if piece.parallel in kinds else piece
            if pieces and piece.parallel == pieces[-1].parallel == ParallelKind.SERIAL:
                merged = DYNAMIC if DYNAMIC in (piece.extent, pieces[-1].extent) else piece.extent * pieces[-1].extent
                pieces[-1] = Piece(merged)
            else:
                pieces.append(piece)
        if len(pieces) == 1 and pieces[0].parallel == ParallelKind.SERIAL:
            return self.unparallelized()
        return replace(self, pieces=tuple(pieces))


MAX_MESH_SIZE = 1 << 16
"""The most devices a mesh may have: its text stays short at any size (`[0, ..., 65535]`),
but the passes and every rank keep tables of its devices."""

ELIDED_RUN = 5
"""A mesh prints a run of at least this many consecutive ids, or rows, as `first, ..., last`."""


@dataclass(frozen=True)
class Mesh:
    """Device ids laid out in a 1-D, 2-D or 3-D grid (row-major).

    Text: the ids, row by row (`[0, 1]`, `[[0, 1], [2, 3]]`, a 3-D mesh plane by plane:
    `[[[0, 1], [2, 3]], [[4, 5], [6, 7]]]`), where `...` stands for the run between its
    neighbours: the ids between two ids (`[0, ..., 511]`: 0 to 511), or the rows that
    continue two rows of consecutive ids row-major (`[[0, ..., 63], ..., [448, ...,
    511]]`: an 8x64 grid of 0 to 511). Printed with every run of `ELIDED_RUN` ids or rows
    or more elided, so the text of a regular mesh does not grow with its size; an
    irregular one is listed.
    """

    devices: tuple[int, ...]
    shape: tuple[int, ...]

    @staticmethod
    def of(devices: Sequence) -> Mesh:
        """From nested lists: a list of ids, a list of rows, or a list of 2-D planes."""
        if devices and not isinstance(devices[0], int):
            parts = [Mesh.of(part) for part in devices]
            if len({part.shape for part in parts}) > 1:
                raise VerifyException(f"{parts[0].ndim + 1}-D device mesh rows must have equal lengths")
            return Mesh(tuple(d for part in parts for d in part.devices), (len(parts), *parts[0].shape))
        return Mesh(tuple(devices), (len(devices),))

    def __getstate__(self) -> dict:
        """Pickled without the tables it worked out."""
        return {"devices": self.devices, "shape": self.shape}

    @functools.cached_property
    def _positions(self) -> dict[int, int]:
        """Each device's index in `devices`: every pass and rank asks where a device is."""
        return {d: i for i, d in enumerate(self.devices)}

    def __contains__(self, device: object) -> bool:
        return device in self._positions

    @property
    def size(self) -> int:
        return len(self.devices)

    @property
    def ndim(self) -> int:
        return len(self.shape)

    @property
    def has_duplicates(self) -> bool:
        return len(self._positions) != self.size

    def axis_of(self, parallel: ParallelKind) -> int | None:
        """The mesh axis a device-parallel type maps to: DIDx the last, DIDy the one
        before, DIDz the one before that."""
        index = self.ndim - 1 - DEVICE_KINDS.index(parallel)
        return index if index >= 0 else None

    def axis_size(self, parallel: ParallelKind) -> int:
        axis = self.axis_of(parallel)
        return 1 if axis is None else self.shape[axis]

    def coordinate(self, device: int) -> tuple[int, ...]:
        flat = self._positions[device]
        coordinate = []
        for extent in reversed(self.shape):
            coordinate.append(flat % extent)
            flat //= extent
        return tuple(reversed(coordinate))

    def index_along(self, device: int, parallel: ParallelKind) -> int:
        """This device's position along the mesh axis of `parallel` (0 if none)."""
        axis = self.axis_of(parallel)
        return 0 if axis is None else self.coordinate(device)[axis]

    def slice(self, device: int, parallel: ParallelKind) -> tuple[int, ...]:
        """The devices that differ from `device` only along `parallel`'s mesh axis."""
        axis = self.axis_of(parallel)
        if axis is None:
            return (device,)
        coordinate = list(self.coordinate(device))
        team = []
        for i in range(self.shape[axis]):
            coordinate[axis] = i
            team.append(self.devices[self._flat(coordinate)])
        return tuple(team)

    def nested(self) -> list:
        """The device ids as nested lists, one level per mesh axis."""

        def part(devices: tuple[int, ...], shape: tuple[int, ...]) -> list:
            if len(shape) == 1:
                return list(devices)
            size = len(devices) // shape[0]
            return [part(devices[i * size : (i + 1) * size], shape[1:]) for i in range(shape[0])]

        return part(self.devices, self.shape)

    def _flat(self, coordinate: Sequence[int]) -> int:
        flat = 0
        for extent, c in zip(self.shape, coordinate, strict=True):
            flat = flat * extent + c
        return flat

    def __str__(self) -> str:
        return self._text

    @functools.cached_property
    def _text(self) -> str:
        """The text, worked out once: every type and team of the mesh prints it."""
        if self.ndim == 1:
            return _elided(self.devices, _follows, str)
        if self.ndim == 3:
            plane = self.size // self.shape[0]
            return "[" + ", ".join(str(Mesh(self.devices[i * plane:(i + 1) * plane], self.shape[1:]))
                                   for i in range(self.shape[0])) + "]"
        return _elided([tuple(r) for r in self.nested()], _continues, lambda row: _elided(row, _follows, str))


def _follows(previous: int, device: int) -> bool:
    return device == previous + 1


def _is_run(row: Sequence[int]) -> bool:
    return all(_follows(a, b) for a, b in zip(row, row[1:]))


def _continues(previous: tuple[int, ...], row: tuple[int, ...]) -> bool:
    """Does `row` continue `previous` row-major (both runs of consecutive ids)?"""
    return len(row) == len(previous) and bool(row) and row[0] == previous[-1] + 1 and _is_run(row) and _is_run(previous)


def _elided(items: Sequence, follows, show) -> str:
    """`[a, b, ...]`, each run of `ELIDED_RUN` or more items that follow one another
    shown as `first, ..., last`."""
    parts: list[str] = []
    start = 0
    for end in range(1, len(items) + 1):
        if end == len(items) or not follows(items[end - 1], items[end]):
            run = items[start:end]
            parts += [show(run[0]), "...", show(run[-1])] if len(run) >= ELIDED_RUN else [show(i) for i in run]
            start = end
    return "[" + ", ".join(parts) + "]"


INT64_MAX = 2**63 - 1
"""Extents, element counts and device ids are torch's int64s."""


FLOAT_TYPES = (Float16Type, BFloat16Type, Float32Type, Float64Type)
"""The floating-point element types (those torch has a dtype for)."""


def is_floating_point(t: Attribute) -> bool:
    return isinstance(t, FLOAT_TYPES)


def is_supported_element_type(t: Attribute) -> bool:
    """Has a torch dtype: f16 bf16 f32 f64, signless i1 i8 i16 i32 i64, ui8 and ui64 (what
    runtime/layouts.py's `torch_dtype` maps)."""
    if is_floating_point(t):
        return True
    if not isinstance(t, IntegerType):
        return False
    width, signedness = t.width.data, t.signedness.data
    if signedness == Signedness.SIGNLESS:
        return width in (1, 8, 16, 32, 64)
    return signedness == Signedness.UNSIGNED and width in (8, 64)


def _axis_with(axes: Sequence[Axis], parallel: ParallelKind, include_reduction: bool = True) -> int | None:
    """The logical axis owning the piece parallelized on `parallel`, if any: an iteration
    axis before a reduction axis (a type may be on one of each, see _parallel_problems)."""
    owners = [index for index, axis in enumerate(axes) if any(p.parallel == parallel for p in axis.pieces)]
    for index in owners:
        if not axes[index].is_reduction:
            return index
    return owners[0] if owners and include_reduction else None


@dataclass(frozen=True)
class TensorDesc:
    """The parameter data of a `TensorType` and its verification; query the type."""

    element_type: Attribute
    axes: tuple[Axis, ...]
    mesh: Mesh | None = None
    alloc_order: tuple[int, ...] | None = None
    stream_allocated: bool = False

    def __hash__(self) -> int:
        # Types key the tables of every pass and of the verifier (shape_of, the printed
        # and checked descs): hashing the nested axes again at each lookup was 4% of
        # a compilation (py-spy).
        return self._hash

    @functools.cached_property
    def _hash(self) -> int:
        return hash((self.element_type, self.axes, self.mesh, self.alloc_order, self.stream_allocated))

    def __getstate__(self) -> dict:
        """Pickled without its hash: string hashes differ from process to process."""
        return {name: value for name, value in self.__dict__.items() if name != "_hash"}

    def problems(self) -> Iterator[str]:
        """Every reason this type is invalid, most basic first."""
        if not is_supported_element_type(self.element_type):
            yield f"unsupported element type {self.element_type}"
        yield from self._mesh_problems()
        for index, axis in enumerate(self.axes):
            yield from _axis_problems(index, axis)
        static = [a.extent for a in self.axes if not a.is_reduction and a.extent != DYNAMIC]
        if math.prod(static) > INT64_MAX:
            yield f"{'x'.join(map(str, static))} = {math.prod(static)} elements do not fit in 64 bits"
        yield from self._parallel_problems()
        yield from self._alloc_problems()

    def _mesh_problems(self) -> Iterator[str]:
        if self.mesh is None:
            return
        if not self.mesh.devices:
            yield "device mesh is empty"
        if self.mesh.size > MAX_MESH_SIZE:
            yield f"a mesh of {self.mesh.size} devices; at most {MAX_MESH_SIZE} are supported"
        if self.mesh.has_duplicates:
            yield f"duplicate device ids in mesh {self.mesh}"
        if any(d < 0 for d in self.mesh.devices):
            yield f"negative device id in mesh {self.mesh}"
        if any(d > INT64_MAX for d in self.mesh.devices):
            yield f"device id {max(self.mesh.devices)} does not fit in 64 bits"
        if self.mesh.ndim > MAX_MESH_DIMENSIONS:
            yield f"device meshes have at most {MAX_MESH_DIMENSIONS} dimensions"

    def _parallel_problems(self) -> Iterator[str]:
        """At most one piece of each parallel type among the iteration axes, and one more
        of a device type among the reduction axes: nvFuser's way to ask for a partial
        result per device that a reduce-scatter combines (`[.., 4(2 didx, 2), r8(2 didx, 4)]`)."""
        pieces = [p for axis in self.axes for p in axis.pieces]
        for parallel in ParallelKind:
            if parallel == ParallelKind.SERIAL:
                continue
            count = sum(p.parallel == parallel for p in pieces)
            reduced = sum(p.parallel == parallel for axis in self.axes if axis.is_reduction for p in axis.pieces)
            if not parallel.is_device and count > 1:
                yield f"{count} {parallel} axes; at most one is allowed"
            elif count > 1 and not (count == 2 and reduced == 1):
                yield f"{count} {parallel} axes; at most one is allowed, and one more on a reduction axis"
        for piece in pieces:
            if not piece.parallel.is_device:
                continue
            if self.mesh is None:
                yield f"{piece.parallel} axis on a tensor without a device mesh"
            elif self.mesh.axis_of(piece.parallel) is None:
                yield f"{piece.parallel} axis but mesh {self.mesh} has no such axis"
            elif piece.extent not in (DYNAMIC, self.mesh.axis_size(piece.parallel)):
                yield (
                    f"{piece.parallel} axis of extent {piece.extent} does not match "
                    f"the {self.mesh.axis_size(piece.parallel)} devices of mesh "
                    f"{self.mesh} along it"
                )

    def _alloc_problems(self) -> Iterator[str]:
        rank = len(self.axes)
        if self.alloc_order is not None and sorted(self.alloc_order) != list(range(rank)):
            yield (
                f"allocation order {list(self.alloc_order)} is not a permutation of "
                f"the {rank} logical axes"
            )
        if self.stream_allocated and _axis_with(self.axes, ParallelKind.STREAM) is None:
            yield "allocation marks a stream axis but the tensor has none"


def _axis_problems(index: int, axis: Axis) -> Iterator[str]:
    where = f"axis {index}"
    if axis.extent < DYNAMIC:
        yield f"{where} has negative extent {axis.extent}"
    if axis.extent > INT64_MAX:
        yield f"{where} extent {axis.extent} does not fit in 64 bits"
    if axis.is_broadcast and axis.extent != 1:
        yield f"{where} is a broadcast axis of extent {axis.extent}; broadcast axes have extent 1"
    if not axis.is_split:
        if axis.pieces[0].extent != axis.extent:
            yield f"{where}: its one loop axis has extent {_fmt(axis.pieces[0].extent)}, not the axis extent {_fmt(axis.extent)}"
        return
    *outer, inner = axis.pieces
    if axis.extent == DYNAMIC and inner.extent != DYNAMIC:  # an inner split: the free piece is outer
        free = [p for p in axis.pieces if p.extent == DYNAMIC]
        if len(free) != 1 or any(p.extent <= 0 for p in axis.pieces if p.extent != DYNAMIC):
            yield f"{where}: a split of a dynamic axis has one piece of dynamic extent and positive static others"
        return
    remaining = axis.extent
    for piece in outer:
        if piece.extent == DYNAMIC or piece.extent <= 0:
            yield f"{where}: split factor must be a positive static integer, got {_fmt(piece.extent)}"
            return
        if remaining != DYNAMIC:
            if remaining % piece.extent:
                yield f"{where}: split factor {piece.extent} does not divide extent {remaining}"
                return
            remaining //= piece.extent
    if inner.extent != remaining:
        yield (
            f"{where}: innermost piece has extent {_fmt(inner.extent)} but the split "
            f"leaves {_fmt(remaining)}"
        )


def _fmt(extent: int) -> str:
    return "?" if extent == DYNAMIC else str(extent)


# --------------------------------------------------------------------------- #
# The xDSL type
# --------------------------------------------------------------------------- #

_KIND_PREFIX = {IterKind.REDUCTION: "r", IterKind.BROADCAST: "b"}


@irdl_attr_definition
class TensorType(Data[TensorDesc], TypeAttribute):
    """!fusion.tensor<f32[8 stream, 64], mesh=[0, 1]> -- see the module docstring."""

    name = "fusion.tensor"

    def verify(self) -> None:
        problem = _first_problem(self.data)
        if problem is not None:
            raise VerifyException(f"invalid tensor type: {problem}")

    # -- construction -----------------------------------------------------------
    @staticmethod
    def of(
        element_type: Attribute,
        axes: Sequence[Axis | int],
        mesh: Mesh | None = None,
        alloc_order: Sequence[int] | None = None,
        stream_allocated: bool = False,
    ) -> TensorType:
        built = tuple(a if isinstance(a, Axis) else Axis(a) for a in axes)
        order = tuple(alloc_order) if alloc_order is not None else None
        if order == tuple(range(len(built))):
            order = None
        return TensorType(TensorDesc(element_type, built, mesh, order, stream_allocated))

    def with_(self, **changes) -> TensorType:
        """A copy with TensorDesc fields replaced (normalizing an identity alloc order)."""
        return _replaced(self.data, tuple(changes.items()))

    # -- the parameters -----------------------------------------------------------
    @property
    def element_type(self) -> Attribute:
        return self.data.element_type

    @property
    def axes(self) -> tuple[Axis, ...]:
        return self.data.axes

    @property
    def mesh(self) -> Mesh | None:
        return self.data.mesh

    @property
    def alloc_order(self) -> tuple[int, ...] | None:
        """The allocation order as written; None for the identity (see allocation_order)."""
        return self.data.alloc_order

    @property
    def stream_allocated(self) -> bool:
        """Is the stream piece sharded in the allocation (one chunk at a time)?"""
        return self.data.stream_allocated

    # -- queries --------------------------------------------------------------------
    @property
    def rank(self) -> int:
        return len(self.axes)

    @property
    def shape(self) -> tuple[int, ...]:
        """Logical extents, reduction axes included."""
        return tuple(a.extent for a in self.axes)

    def loop_domain(self) -> list[tuple[int, Piece]]:
        """(logical axis, piece) for every loop axis, outermost first."""
        return [(i, p) for i, axis in enumerate(self.axes) for p in axis.pieces]

    def axis_with(self, parallel: ParallelKind, include_reduction: bool = True) -> int | None:
        """The logical axis owning the piece parallelized on `parallel`, if any."""
        known, key = self._axes_with, (parallel, include_reduction)
        if key not in known:
            known[key] = _axis_with(self.axes, parallel, include_reduction)
        return known[key]

    def stream_axis(self) -> int | None:
        return self.axis_with(ParallelKind.STREAM)

    def is_sharded(self, parallel: ParallelKind | None = None) -> bool:
        """Has a non-reduction device-parallel axis (of type `parallel` if given)."""
        kinds = (parallel,) if parallel else DEVICE_KINDS
        return any(self.axis_with(k, include_reduction=False) is not None for k in kinds)

    def is_spread(self, parallel: ParallelKind | None = None) -> bool:
        """Sharded (on `parallel` if given) across more than one device: a device type on
        a mesh axis of one device splits nothing."""
        kinds = (parallel,) if parallel else DEVICE_KINDS
        return self.mesh is not None and any(self.is_sharded(k) and self.mesh.axis_size(k) > 1 for k in kinds)

    def parallel_count(self) -> int:
        """Stream pieces and device pieces of value axes (nvFuser's "most parallel" measure)."""
        return sum(
            1
            for axis in self.axes
            for piece in axis.pieces
            if piece.parallel == ParallelKind.STREAM or (piece.parallel.is_device and not axis.is_reduction)
        )

    def allocation_order(self) -> tuple[int, ...]:
        return self.alloc_order if self.alloc_order is not None else tuple(range(self.rank))

    def value_axes(self) -> list[Axis]:
        """The axes a consumer sees: reduction axes of a producer are not part of its value."""
        return [self.axes[i] for i in self._value_positions]

    def value_positions(self) -> list[int]:
        """Logical indices of the value axes (the non-reduction ones)."""
        return list(self._value_positions)

    def value_allocation_order(self) -> tuple[int, ...] | None:
        """The allocation order over the value axes (torch dims), reduction axes left out
        (they are never allocated); None for the identity."""
        if self.alloc_order is None:
            return None
        position = {logical: k for k, logical in enumerate(self._value_positions)}
        order = tuple(position[i] for i in self.alloc_order if i in position)
        return None if order == tuple(range(len(order))) else order

    def value_type(self) -> TensorType:
        """What a `fusion.set` of this produces with the same sharding and layout: the
        value axes, on the same mesh, allocated in the same order."""
        return TensorType.of(self.element_type, self.value_axes(), self.mesh, self.value_allocation_order())

    def value_position(self, axis: int) -> int:
        """The position of logical axis `axis` among the value axes."""
        return sum(not a.is_reduction for a in self.axes[:axis])

    def element_bytes(self) -> int:
        """Bytes of one element in a buffer (a 1-bit predicate takes a byte)."""
        return max(1, self.element_type.bitwidth // 8)  # type: ignore[attr-defined]  # every supported element type has one

    def value_shape(self) -> tuple[int, ...]:
        """The global (unsharded) shape of the tensor's value: reduction axes dropped."""
        return tuple(a.extent for a in self.value_axes())

    def is_on_rank(self, rank: int | None) -> bool:
        """Does `rank` hold a buffer of this tensor? Every rank does without a mesh; no
        rank (None) means the global reference semantics, where every tensor exists."""
        return rank is None or self.mesh is None or rank in self.mesh

    def dynamic_value_axes(self) -> list[int]:
        """Logical indices of the value axes whose extent is dynamic."""
        return [i for i in self.value_positions() if self.axes[i].extent == DYNAMIC]

    def local_extent(self, index: int, *, stream_sharded: bool | None = None, extent: int | None = None) -> int:
        """Extent of logical axis `index` in one rank's buffer; `extent`: the axis's
        logical extent at run time, where the type's is dynamic."""
        axis = self.axes[index]
        if extent is not None:
            axis = replace(axis, extent=extent)
        if stream_sharded is None:
            stream_sharded = self.stream_allocated
        factors = []
        for piece in axis.pieces:
            if piece.parallel.is_device or (stream_sharded and piece.parallel == ParallelKind.STREAM):
                if not axis.is_split:
                    return 1  # the whole axis is the parallel piece, even when dynamic
                if piece.extent == DYNAMIC:
                    return DYNAMIC
                factors.append(piece.extent)
        if axis.extent == DYNAMIC:
            return DYNAMIC
        return axis.extent // math.prod(factors)

    def chunk_is_dense(self, axis: int) -> bool:
        """Is a chunk of a dense buffer of this type along logical axis `axis` (an
        `hir.alias_select`) dense too? When every axis allocated outside it holds one
        element locally."""
        order = self.allocation_order()
        return all(self.axes[i].is_reduction or self.local_extent(i) == 1 for i in order[: order.index(axis)])

    def local_shape(self, rank: int | None = None) -> tuple[int, ...] | None:
        """Shape of the buffer rank `rank` allocates, in allocation order.

        None if the tensor has a mesh that does not contain `rank`. Device-parallel
        axes count at their local extent, so the shape is the same on every member.
        """
        if not self.is_on_rank(rank):
            return None
        return tuple(
            self.local_extent(i) for i in self.allocation_order() if not self.axes[i].is_reduction
        )

    # -- derived data ---------------------------------------------------------------
    # The passes ask the same type object the same questions over and over (sharding
    # queries ask several per op and input); a type is immutable, so each object keeps
    # what it worked out.
    @functools.cached_property
    def _value_positions(self) -> tuple[int, ...]:
        return tuple(i for i, a in enumerate(self.axes) if not a.is_reduction)

    @functools.cached_property
    def _axes_with(self) -> dict[tuple[ParallelKind, bool], int | None]:
        """`axis_with`'s answers so far."""
        return {}

    # -- syntax -----------------------------------------------------------------
    @classmethod
    def parse_parameter(cls, parser: AttrParser) -> TensorDesc:
        return _PARSED_TYPES.parse(parser, _parse_desc)

    def print_parameter(self, printer: Printer) -> None:
        printer.print_string(_format_parameter(self.data))


def type_text(t: TensorType) -> str:
    """`t` as xDSL's printer prints it: `!fusion.tensor<...>`."""
    return _type_text(t.data)


def tensor_type(value: SSAValue) -> TensorType:
    """The type of `value`, which must be a tensor (the typed accessor passes and the
    runtime use instead of asserting)."""
    if not isinstance(value.type, TensorType):
        name = f"%{value.name_hint}" if value.name_hint else "a value"
        raise TypeError(f"{name} is not a tensor: its type is {value.type}")
    return value.type


class _ParsedTypes:
    """Tensor types parsed before, by their text from `<` to `>`.

    A program names the same few types over and over, and lexing one costs more than
    the op around it. A text is kept only if it parsed and ends at its first `>`, and
    only if it holds no alias or string (`!`, `#`, `"`: their meaning depends on the
    file), so the same text always parses to the same type; it is looked up by the text
    up to the next `>`. At most `limit` texts are kept (a full table starts over).
    """

    def __init__(self, limit: int = 4096):
        self.limit = limit
        self.descs: dict[str, TensorDesc] = {}

    def parse(self, parser: AttrParser, parse_desc) -> TensorDesc:
        text = source_text(parser)
        known, key, end = self.lookup(text, parser.pos)
        if known is not None:
            skip_to(parser, "<", end)  # a known text starts with its `<`
            return known
        desc = parse_desc(parser)
        if end and not text[end : parser.pos].strip() and not any(c in key for c in '!#"'):
            if len(self.descs) >= self.limit:
                self.descs.clear()
            self.descs[key] = desc
        return desc

    def lookup(self, text: str, start: int) -> tuple[TensorDesc | None, str, int]:
        """The desc parsed before from the text at `start`, if any; the key; and where
        the text after it starts."""
        end = text.find(">", start) + 1
        key = text[start:end] if end else ""
        return self.descs.get(key), key, end


_PARSED_TYPES = _ParsedTypes()


def parse_known_tensor_type(parser: AttrParser) -> TensorType | None:
    """The tensor type `parser` is at, consumed, if its text was parsed before: without
    xDSL's generic way to `parse_parameter` (the type's name looked up, the type built and
    verified again), a tenth of parsing a fusion. None, with nothing consumed, otherwise."""
    text, start = source_text(parser), parser.pos
    if not text.startswith(_TENSOR_TYPE_NAME, start):
        return None
    if parser.ctx.get_optional_type(TensorType.name) is not TensorType:
        return None  # a context without the fusion dialect, which xDSL's path refuses
    known, _, end = _PARSED_TYPES.lookup(text, start + len(_TENSOR_TYPE_NAME))
    if known is None:  # also a longer name that starts alike: no known text follows it
        return None
    skip_to(parser, _TENSOR_TYPE_NAME, end)
    return _known_type(known)


_TENSOR_TYPE_NAME = f"!{TensorType.name}"


@functools.lru_cache(maxsize=4096)
def _known_type(desc: TensorDesc) -> TensorType:
    return TensorType(desc)


def _parse_desc(parser: AttrParser) -> TensorDesc:
    """`<f32[8, 2 didx], mesh=[0, 1]>`: the parameters, checked (errors located at the type)."""
    start = parser.pos
    with parser.in_angle_brackets():
        element_type = parser.parse_type()
        axes = parser.parse_comma_separated_list(
            parser.Delimiter.SQUARE, lambda: _parse_axis(parser)
        )
        mesh: Mesh | None = None
        alloc: tuple[tuple[int, ...], int | None] | None = None
        seen: set[str] = set()
        while parser.parse_optional_punctuation(","):
            key_span = next_token(parser).span
            key = parser.parse_keyword_in(("mesh", "alloc"), " in tensor type")
            if key in seen:
                parser.raise_error(f"duplicate {key}= clause in tensor type", key_span)
            seen.add(key)
            parser.parse_punctuation("=")
            if key == "mesh":
                mesh = parse_mesh(parser)
            else:
                alloc = _parse_alloc(parser)
    order, stream_marked = alloc if alloc else (None, None)
    if order == tuple(range(len(axes))):
        order = None
    desc = TensorDesc(element_type, tuple(axes), mesh, order, stream_marked is not None)
    for problem in desc.problems():
        parser.raise_error(f"invalid tensor type: {problem}", start, parser.pos)
    stream_axis = _axis_with(desc.axes, ParallelKind.STREAM)
    if stream_marked is not None and stream_marked != stream_axis:
        parser.raise_error(
            f"invalid tensor type: allocation marks axis {stream_marked} as stream "
            f"but the stream axis is {stream_axis}",
            start,
            parser.pos,
        )
    return desc


# A program names the same few types over and over: each is checked and formatted once
# (TensorDescs are immutable values).


@functools.lru_cache(maxsize=4096)
def _replaced(desc: TensorDesc, changes: tuple[tuple[str, object], ...]) -> TensorType:
    """`TensorType.with_`: the passes derive the same few types from the same few types
    over and over (a chunk's type, a buffer's allocated whole)."""
    desc = replace(desc, **dict(changes))  # type: ignore[arg-type]  # TensorDesc's fields by name, from `with_`
    if desc.alloc_order == tuple(range(len(desc.axes))):
        desc = replace(desc, alloc_order=None)
    return TensorType(desc)


@functools.lru_cache(maxsize=4096)
def _first_problem(desc: TensorDesc) -> str | None:
    return next(desc.problems(), None)


@functools.lru_cache(maxsize=4096)
def _type_text(desc: TensorDesc) -> str:
    return f"!{TensorType.name}{_format_parameter(desc)}"


@functools.lru_cache(maxsize=4096)
def _format_parameter(desc: TensorDesc) -> str:
    """`<f32[8 stream, 64], mesh=[0, 1], alloc=[..]>`: the type's text after its name
    (an element type is a builtin type, printed the same by every printer)."""
    text = f"<{desc.element_type}[" + ", ".join(_format_axis(a) for a in desc.axes) + "]"
    if desc.mesh is not None:
        text += f", mesh={desc.mesh}"
    if desc.alloc_order is not None or desc.stream_allocated:
        stream_axis = _axis_with(desc.axes, ParallelKind.STREAM) if desc.stream_allocated else None
        order = desc.alloc_order if desc.alloc_order is not None else range(len(desc.axes))
        text += ", alloc=[" + ", ".join(f"{i} stream" if i == stream_axis else str(i) for i in order) + "]"
    return text + ">"


def _format_axis(axis: Axis) -> str:
    text = _KIND_PREFIX.get(axis.kind, "") + _fmt(axis.extent)
    if axis.is_split:
        return text + "(" + ", ".join(_format_piece(p) for p in axis.pieces) + ")"
    if axis.pieces[0].parallel != ParallelKind.SERIAL:
        text += f" {axis.pieces[0].parallel}"
    return text


def _format_piece(piece: Piece) -> str:
    if piece.parallel == ParallelKind.SERIAL:
        return _fmt(piece.extent)
    return f"{_fmt(piece.extent)} {piece.parallel}"


def _parse_extent(parser: AttrParser) -> int:
    if parser.parse_optional_punctuation("?"):
        return DYNAMIC
    return _parse_int64(parser, "an extent", allow_negative=False)


def _parse_int64(parser: AttrParser, what: str, allow_negative: bool = True) -> int:
    """An integer that torch can hold, written in ASCII digits (the lexer also takes
    other Unicode digits, such as a full-width `４`)."""
    span = next_token(parser).span
    if not span.text.isascii():
        parser.raise_error(f"expected {what} in ASCII digits, got `{span.text}`", span)
    value = parser.parse_integer(allow_boolean=False, allow_negative=allow_negative, context_msg=f" as {what}")
    if value > INT64_MAX:
        parser.raise_error(f"{what} {value} does not fit in 64 bits", span)
    return value


def _parse_kind_and_extent(parser: AttrParser) -> tuple[IterKind, int]:
    """`8`, `?`, `r8`, `r?`, `b1`: the lexer reads `r8` as one identifier."""
    token = next_token(parser)
    if token.kind == MLIRTokenKind.BARE_IDENT and token.text[0] in "rb":
        kind = IterKind.REDUCTION if token.text[0] == "r" else IterKind.BROADCAST
        rest = token.text[1:]
        if rest.isascii() and rest.isdigit():
            parser.parse_optional_identifier()
            return kind, int(rest)
        if rest == "":
            parser.parse_optional_identifier()
            parser.parse_punctuation("?", " after the axis kind")
            return kind, DYNAMIC
        parser.raise_error(f"expected an axis like `8`, `?`, `r8` or `b1`, got `{token.text}`")
    return IterKind.ITERATION, _parse_extent(parser)


def _parse_parallel(parser: AttrParser) -> ParallelKind:
    return parser.parse_optional_str_enum(ParallelKind) or ParallelKind.SERIAL


def _parse_piece(parser: AttrParser) -> Piece:
    extent = _parse_extent(parser)
    return Piece(extent, _parse_parallel(parser))


def _parse_axis(parser: AttrParser) -> Axis:
    kind, extent = _parse_kind_and_extent(parser)
    if parser.parse_optional_punctuation("(") is None:
        return Axis(extent, kind, (Piece(extent, _parse_parallel(parser)),))
    if next_token(parser).kind == MLIRTokenKind.R_PAREN:
        parser.raise_error("expected the pieces of a split, such as `8(2 didx, 4)`")
    pieces = parser.parse_comma_separated_list(parser.Delimiter.NONE, lambda: _parse_piece(parser))
    parser.parse_punctuation(")")
    return Axis(extent, kind, tuple(pieces))


def parse_mesh(parser: AttrParser) -> Mesh:
    """A mesh's text (see `Mesh`): `[0, 1]`, `[[0, 1], [2, 3]]`, `[0, ..., 511]`, a 3-D
    mesh's planes. Its problems (an empty mesh, a duplicate id) are the verifier's, except
    rows or planes of different shapes and a `...` that stands for no run."""
    start = parser.pos
    if next_token(parser).kind != MLIRTokenKind.L_SQUARE:
        parser.raise_error("expected a device mesh like [0, 1] or [[0, 1], [2, 3]]")
    entries = _parse_entries(parser, lambda: _parse_row(parser) if _at_row(parser) else _parse_device(parser))
    if any(isinstance(e, Mesh) for e in entries):
        return _planes(parser, entries, start)
    rows = [e for e in entries if isinstance(e, tuple)]
    if not rows:
        return Mesh.of(_expanded(parser, entries, _ids_between))
    if len(rows) != sum(not isinstance(e, Span) for e in entries):
        parser.raise_error("a device mesh lists device ids or rows of them, not both", start, parser.pos)
    grid = _expanded(parser, entries, _rows_between)
    if len({len(r) for r in grid}) > 1:
        parser.raise_error("2-D device mesh rows must have equal lengths", start, parser.pos)
    return Mesh.of(grid)


def _at_row(parser: AttrParser) -> bool:
    return next_token(parser).kind == MLIRTokenKind.L_SQUARE


def _parse_row(parser: AttrParser) -> tuple[int, ...] | Mesh:
    """A row of ids, or (in a 3-D mesh) a plane of rows."""
    if token_at(parser, next_token(parser).span.end).kind == MLIRTokenKind.L_SQUARE:
        return parse_mesh(parser)
    return tuple(_expanded(parser, _parse_entries(parser, lambda: _parse_device(parser)), _ids_between))


def _planes(parser: AttrParser, entries: list, start: int) -> Mesh:
    """A mesh of 3 axes (or more, which the verifier refuses) from its planes, of one shape
    (no `...` between planes)."""
    if not all(isinstance(e, Mesh) for e in entries):
        parser.raise_error("a 3-D device mesh lists planes of device ids, and no `...` between them",
                           start, parser.pos)
    try:
        return Mesh.of([plane.nested() for plane in entries])
    except VerifyException as error:
        parser.raise_error(str(error), start, parser.pos)


def _parse_entries(parser: AttrParser, parse_item) -> list:
    """`[item, ..., item]`: the items, and the span of each `...` in its place."""

    def entry():
        span = next_token(parser).span
        return span if parser.parse_optional_punctuation("...") else parse_item()

    return parser.parse_comma_separated_list(parser.Delimiter.SQUARE, entry)


def _expanded(parser: AttrParser, entries: list, between) -> list:
    """The entries with each `...` replaced by `between(before, after)`, the run it
    stands for (checked to fit in a mesh before it is built)."""
    items: list = []
    for index, entry in enumerate(entries):
        if not isinstance(entry, Span):
            items.append(entry)
            continue
        after = entries[index + 1] if index + 1 < len(entries) else None
        if not items or isinstance(entries[index - 1], Span) or after is None or isinstance(after, Span):
            parser.raise_error("`...` stands for the run between two entries of a mesh", entry)
        run = between(items[-1], after)
        if isinstance(run, str):
            parser.raise_error(run, entry)
        if len(items) + len(run) > MAX_MESH_SIZE:
            parser.raise_error(f"`...` makes a mesh of more than {MAX_MESH_SIZE} devices", entry)
        items.extend(run)
    return items


def _ids_between(first: int, last: int) -> range | str:
    if last <= first:
        return f"`...` stands for the ids between a device id and a larger one, not {first} and {last}"
    return range(first + 1, last)


def _rows_between(first: tuple[int, ...], last: tuple[int, ...]) -> list[tuple[int, ...]] | str:
    width = len(first)
    step = last[0] - first[0] if first and last else 0
    if not (_is_run(first) and _is_run(last) and len(last) == width > 0 and step > 0 and step % width == 0):
        return ("`...` stands for the rows that continue two rows row-major: rows of consecutive ids, "
                "of one width, the second starting a multiple of it after the first")
    return [tuple(range(start, start + width)) for start in range(first[0] + width, last[0], width)]


def _parse_device(parser: AttrParser) -> int:
    return _parse_int64(parser, "a device id")


def _parse_alloc(parser: AttrParser) -> tuple[tuple[int, ...], int | None]:
    def entry() -> tuple[int, bool]:
        axis = parser.parse_integer(allow_boolean=False, allow_negative=False)
        return axis, parser.parse_optional_keyword("stream") is not None

    entries = parser.parse_comma_separated_list(parser.Delimiter.SQUARE, entry)
    marked = [axis for axis, stream in entries if stream]
    if len(marked) > 1:
        parser.raise_error("allocation marks more than one stream axis")
    return tuple(axis for axis, _ in entries), (marked[0] if marked else None)
