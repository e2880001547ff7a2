"""Local buffers of sharded tensors: shapes, layouts, and moving data between the global
(unsharded) tensor and each rank's shard.

A rank's local tensor has the tensor's value axes (reduction axes dropped) in logical
order, each at its local extent (`TensorType.local_extent`: a device-parallel piece counts
at extent 1). The allocation order of the type is realized as strides: the buffer is dense
in allocation order, and permuted back to logical order.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence

import torch
from xdsl.dialects.builtin import BFloat16Type, Float16Type, Float32Type, Float64Type, IntegerType, Signedness

from hostir_dialect.tensor_type import DEVICE_KINDS, DYNAMIC, ParallelKind, TensorType

_FLOATS = {Float16Type: torch.float16, BFloat16Type: torch.bfloat16, Float32Type: torch.float32, Float64Type: torch.float64}
_SIGNED = {1: torch.bool, 8: torch.int8, 16: torch.int16, 32: torch.int32, 64: torch.int64}
_UNSIGNED = {8: torch.uint8, 64: torch.uint64}


def torch_dtype(element_type) -> torch.dtype:
    if isinstance(element_type, TensorType):
        element_type = element_type.element_type
    if type(element_type) in _FLOATS:
        return _FLOATS[type(element_type)]
    if isinstance(element_type, IntegerType):
        width = element_type.width.data
        if element_type.signedness.data == Signedness.UNSIGNED and width in _UNSIGNED:
            return _UNSIGNED[width]
        if width in _SIGNED:
            return _SIGNED[width]
    raise ValueError(f"element type {element_type} has no torch equivalent")


def logical_shape(t: TensorType, rank: int | None) -> tuple[int, ...]:
    """The torch shape of the tensor's buffer: value axes in logical order, local extents
    on a rank (`rank` not None), global extents for the reference semantics (`rank` None).
    DYNAMIC (-1) where unknown."""
    if rank is None:
        return t.value_shape()
    return tuple(t.local_extent(i) for i in t.value_positions())


def shard_factor(t: TensorType, axis: int) -> int | None:
    """The logical extent of axis `axis` divided by one rank's extent of it: the sizes of
    the mesh axes its device pieces are parallelized on, times its stream piece where the
    buffer is stream-allocated (None: that piece is dynamic)."""
    factor = 1
    for piece in t.axes[axis].pieces:
        if piece.parallel.is_device and t.mesh is not None:
            factor *= t.mesh.axis_size(piece.parallel)
        elif piece.parallel == ParallelKind.STREAM and t.stream_allocated:
            if piece.extent == DYNAMIC:
                return None
            factor *= piece.extent
    return factor


def whole_dynamic_device_axes(t: TensorType) -> dict[int, int]:
    """Logical axis -> devices, for each value axis of dynamic extent that is one device
    piece (`? didx`): its extent must be the number of devices, one element on each."""
    if t.mesh is None:
        return {}
    return {i: t.mesh.axis_size(a.pieces[0].parallel) for i, a in enumerate(t.axes)
            if a.extent == DYNAMIC and not a.is_reduction and not a.is_split and a.pieces[0].parallel.is_device}


def empty_buffer(t: TensorType, rank: int | None, device: torch.device, shape: Sequence[int] | None = None) -> torch.Tensor:
    """A fresh buffer for `t` on `rank`, dense in allocation order, viewed in logical order."""
    shape = tuple(logical_shape(t, rank) if shape is None else shape)
    dtype = torch_dtype(t)
    perm = t.value_allocation_order()
    if perm is None:
        return torch.empty(shape, dtype=dtype, device=device)
    dense = torch.empty([shape[p] for p in perm], dtype=dtype, device=device)
    return dense.permute([perm.index(d) for d in range(len(perm))])


def in_allocation_order(value: torch.Tensor, perm: tuple[int, ...] | None) -> torch.Tensor:
    """`value` laid out as a buffer of its type is: dense in allocation order `perm`
    (logical order when None), viewed in logical order. Copies only when it is not."""
    if perm is None:
        return value.contiguous()
    if value.permute(perm).is_contiguous():
        return value
    return copied_in_allocation_order(value, perm)


def copied_in_allocation_order(value: torch.Tensor, perm: tuple[int, ...]) -> torch.Tensor:
    """A new buffer holding `value`, dense in allocation order `perm`, viewed in logical
    order: one copy, whatever `value`'s strides (a view of another buffer, say)."""
    dense = torch.empty([value.shape[p] for p in perm], dtype=value.dtype, device=value.device)
    result = dense.permute([perm.index(d) for d in range(len(perm))])
    target, source = _as_words(result), _as_words(value)
    if target is not None and source is not None:
        target.copy_(source)
    else:
        result.copy_(value)
    return result


_WORD = torch.int64


def _as_words(t: torch.Tensor) -> torch.Tensor | None:
    """`t` viewed as 8-byte words where its last dimension is contiguous and whole words,
    else None: a permuting copy moves one element per load, which on 2-byte elements
    leaves most of a GPU's memory bandwidth unused (43 us for a 32 MiB bf16 reorder on
    H200, where a plain copy takes 16)."""
    word = _WORD.itemsize
    if t.dim() == 0 or t.stride(-1) != 1 or t.element_size() >= word or t.is_complex():
        return None
    if t.data_ptr() % word or any(x * t.element_size() % word for x in (t.shape[-1], t.storage_offset(), *t.stride()[:-1])):
        return None
    return t.view(_WORD)


def flatten_in_allocation_order(buffer: torch.Tensor, perm: tuple[int, ...] | None, what: str) -> torch.Tensor:
    """The buffer's memory as a 1-D view; refuses a buffer that is not dense in allocation order."""
    dense = buffer if perm is None else buffer.permute(perm)
    if not dense.is_contiguous():
        raise ValueError(
            f"{what} buffer is not contiguous (shape {list(buffer.shape)}, strides {list(buffer.stride())}); "
            "collectives need dense buffers"
        )
    return dense.view(-1)


# --------------------------------------------------------------------------- #
# Global tensor <-> per-rank shards
# --------------------------------------------------------------------------- #


def _piece_extents(t: TensorType, index: int, extent: int, mesh_sizes: dict[ParallelKind, int]) -> list[int]:
    """Extents of an axis' pieces for a global extent `extent` (resolving DYNAMIC pieces);
    refuses an extent they do not fit (a whole device axis holds one element per device)."""
    pieces = t.axes[index].pieces
    extents = [mesh_sizes.get(p.parallel, p.extent) if p.parallel.is_device else p.extent for p in pieces]
    known = math.prod(1 if e == DYNAMIC else e for e in extents)
    if (DYNAMIC in extents and extent % known) or (DYNAMIC not in extents and extent != known):
        shown = ", ".join("?" if e == DYNAMIC else str(e) for e in extents)
        raise ValueError(f"axis {index} of {t} has extent {extent}, which does not fit its pieces ({shown})")
    return [extent // known if e == DYNAMIC else e for e in extents]


def _shard_index(t: TensorType, global_shape: Sequence[int], rank: int):
    """(piece shape, index tuple) that picks `rank`'s shard out of the global tensor
    reshaped into its pieces; a device-parallel piece is narrowed to this rank's slot."""
    mesh = t.mesh
    sizes = {pt: mesh.axis_size(pt) for pt in DEVICE_KINDS} if mesh else {}
    piece_shape: list[int] = []
    index: list[slice] = []
    for k, axis_index in enumerate(t.value_positions()):
        extents = _piece_extents(t, axis_index, global_shape[k], sizes)
        for piece, extent in zip(t.axes[axis_index].pieces, extents):
            piece_shape.append(extent)
            if piece.parallel.is_device and mesh is not None:
                position = mesh.index_along(rank, piece.parallel)
                index.append(slice(position, position + 1))
            else:
                index.append(slice(None))
    return piece_shape, tuple(index)


def global_positions(t: TensorType, rank: int | None, axis: int, local_extent: int,
                     device: torch.device) -> tuple[torch.Tensor, int]:
    """Where the elements of value axis `axis` of `rank`'s buffer of `t` sit along that axis
    in the unsharded tensor (`rank` None: the unsharded tensor itself), as int64, and the
    axis's unsharded extent."""
    logical = t.value_positions()[axis]
    mesh, pieces = t.mesh, t.axes[logical].pieces
    devices = [mesh.axis_size(p.parallel) for p in pieces if p.parallel.is_device] if mesh and rank is not None else []
    extent = local_extent * math.prod(devices)
    positions = torch.arange(extent, device=device)
    if not devices:
        return positions, extent
    assert mesh is not None and rank is not None
    extents = _piece_extents(t, logical, extent, {pt: mesh.axis_size(pt) for pt in DEVICE_KINDS})
    index = tuple(
        slice(mesh.index_along(rank, p.parallel), mesh.index_along(rank, p.parallel) + 1) if p.parallel.is_device
        else slice(None) for p in pieces
    )
    return positions.reshape(extents)[index].reshape(-1), extent


def global_linear_index(t: TensorType, rank: int | None, local_shape: Sequence[int], device: torch.device) -> torch.Tensor:
    """The row-major position in the unsharded tensor of every element of `rank`'s buffer
    of `t` (of logical shape `local_shape`), as int64: what positional ops compute from."""
    index = torch.zeros((), dtype=torch.int64, device=device)
    for axis, local_extent in enumerate(local_shape):
        positions, extent = global_positions(t, rank, axis, local_extent, device)
        index = index.unsqueeze(-1) * extent + positions
    return index


def random_tensor(t: TensorType, generator: torch.Generator) -> torch.Tensor:
    """A random global tensor of `t` (of static shape): normal floats, booleans, integers in [0, 10)."""
    shape = t.value_shape()
    dtype = torch_dtype(t)
    if dtype.is_floating_point:
        return torch.randn(shape, generator=generator).to(dtype)
    if dtype == torch.bool:
        return torch.rand(shape, generator=generator) > 0.5
    return torch.randint(0, 10, shape, generator=generator, dtype=dtype)


def _check_shardable(t: TensorType) -> None:
    if t.stream_allocated:
        raise ValueError("a stream-allocated tensor holds one stream chunk at a time; it has no fixed shard")


def shard_tensor(global_tensor: torch.Tensor, tensor_type: TensorType, rank: int) -> torch.Tensor | None:
    """Rank `rank`'s local shard of `global_tensor` (None when the rank is not in the mesh),
    laid out in the type's allocation order."""
    _check_shardable(tensor_type)
    if not tensor_type.is_on_rank(rank):
        return None
    expected = tensor_type.value_shape()
    if global_tensor.dim() != len(expected) or any(e not in (DYNAMIC, g) for e, g in zip(expected, global_tensor.shape)):
        raise ValueError(f"global tensor of shape {list(global_tensor.shape)} does not fit type {tensor_type}")
    piece_shape, index = _shard_index(tensor_type, global_tensor.shape, rank)
    local = global_tensor.reshape(piece_shape)[index]
    shape = _merge(local.shape, tensor_type)
    result = empty_buffer(tensor_type, rank, global_tensor.device, shape)
    return result.copy_(local.reshape(shape))


def _merge(piece_shape: Sequence[int], t: TensorType) -> list[int]:
    """Logical extents from the extents of every axis' pieces."""
    merged, k = [], 0
    for axis_index in t.value_positions():
        count = len(t.axes[axis_index].pieces)
        merged.append(int(math.prod(piece_shape[k : k + count])))
        k += count
    return merged


def unshard(shards_by_rank: Sequence[torch.Tensor | None] | Mapping[int, torch.Tensor | None], tensor_type: TensorType) -> torch.Tensor:
    """The global tensor assembled from every rank's local shard (inverse of shard_tensor).

    `shards_by_rank` is indexed by world rank. Replicated data (an unsharded tensor, or a
    mesh axis the tensor is not sharded along) is taken from the first rank holding it.
    """
    shards = dict(shards_by_rank) if isinstance(shards_by_rank, Mapping) else dict(enumerate(shards_by_rank))
    _check_shardable(tensor_type)
    mesh = tensor_type.mesh
    ranks = [r for r in (mesh.devices if mesh else sorted(shards)) if shards.get(r) is not None]
    if not ranks:
        raise ValueError(f"no rank holds a shard of {tensor_type}")
    held = {r: shard for r in ranks if (shard := shards[r]) is not None}
    first = held[ranks[0]]
    if not tensor_type.is_sharded():
        return first.clone()
    guess = _global_guess(first, tensor_type)
    global_shape = [s if e == DYNAMIC else e for e, s in zip(tensor_type.value_shape(), guess)]
    result = torch.empty(global_shape, dtype=first.dtype, device=first.device)
    filled = set()
    for rank in ranks:
        piece_shape, index = _shard_index(tensor_type, global_shape, rank)
        view = result.view(piece_shape)[index]
        view.copy_(held[rank].reshape(view.shape))
        filled.add(_slots(index))
    assert mesh is not None, "a sharded tensor has a mesh"
    for rank in mesh.devices:
        if _slots(_shard_index(tensor_type, global_shape, rank)[1]) not in filled:
            raise ValueError(f"rank {rank} holds no shard of {tensor_type}, and no other rank holds its part")
    return result


def _slots(index: tuple[slice, ...]) -> tuple[int | None, ...]:
    """Which part of the global tensor a shard index picks (hashable)."""
    return tuple(s.start for s in index)


def _global_guess(local: torch.Tensor, t: TensorType) -> list[int]:
    """Global extents of a (possibly dynamic) type from one local shard."""
    mesh = t.mesh
    shape = []
    for k, axis_index in enumerate(t.value_positions()):
        pieces = t.axes[axis_index].pieces
        factor = math.prod(mesh.axis_size(p.parallel) for p in pieces if p.parallel.is_device and mesh is not None)
        shape.append(local.shape[k] * factor)
    return shape
