"""Local buffers of sharded tensors: shapes, layouts, and moving data between the global
(unsharded) tensor and each rank's shard.

A rank's local tensor has the tensor's value axes (reduction axes dropped) in logical
order, each at its local extent (`TensorDesc.local_extent`: a device-parallel piece counts
at extent 1). The allocation order of the type is realized as strides: the buffer is dense
in allocation order, and permuted back to logical order.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import torch
from xdsl.dialects.builtin import BFloat16Type, Float16Type, Float32Type, Float64Type, IntegerType, Signedness

from hostir_dialect.tensor_type import DYNAMIC, ParallelType, TensorDesc, TensorType

_FLOATS = {Float16Type: torch.float16, BFloat16Type: torch.bfloat16, Float32Type: torch.float32, Float64Type: torch.float64}
_SIGNED = {1: torch.bool, 8: torch.int8, 16: torch.int16, 32: torch.int32, 64: torch.int64}


def torch_dtype(element_type) -> torch.dtype:
    if isinstance(element_type, TensorType):
        element_type = element_type.element_type
    if type(element_type) in _FLOATS:
        return _FLOATS[type(element_type)]
    if isinstance(element_type, IntegerType):
        width = element_type.width.data
        if element_type.signedness.data == Signedness.UNSIGNED and width == 8:
            return torch.uint8
        if width in _SIGNED:
            return _SIGNED[width]
    raise ValueError(f"element type {element_type} has no torch equivalent")


def _desc(t: TensorType | TensorDesc) -> TensorDesc:
    return t.data if isinstance(t, TensorType) else t


def value_positions(desc: TensorDesc) -> list[int]:
    return [i for i, a in enumerate(desc.axes) if not a.is_reduction]


def logical_shape(t: TensorType | TensorDesc, rank: int | None) -> tuple[int, ...]:
    """The torch shape of the tensor's buffer: value axes in logical order, local extents
    on a rank (`rank` not None), global extents for the reference semantics (`rank` None).
    DYNAMIC (-1) where unknown."""
    desc = _desc(t)
    if rank is None:
        return desc.value_shape()
    return tuple(desc.local_extent(i) for i in value_positions(desc))


def value_alloc_perm(t: TensorType | TensorDesc) -> tuple[int, ...] | None:
    """The allocation order over value axes (torch dims), or None when it is the identity."""
    desc = _desc(t)
    if desc.alloc_order is None:
        return None
    positions = value_positions(desc)
    perm = tuple(positions.index(i) for i in desc.alloc_order if i in positions)
    return None if perm == tuple(range(len(perm))) else perm


def is_on_rank(t: TensorType | TensorDesc, rank: int | None) -> bool:
    desc = _desc(t)
    return rank is None or desc.mesh is None or rank in desc.mesh.devices


def empty_buffer(t: TensorType, rank: int | None, device: torch.device, shape: Sequence[int] | None = None) -> torch.Tensor:
    """A fresh buffer for `t` on `rank`, dense in allocation order, viewed in logical order."""
    shape = tuple(logical_shape(t, rank) if shape is None else shape)
    dtype = torch_dtype(t)
    perm = value_alloc_perm(t)
    if perm is None:
        return torch.empty(shape, dtype=dtype, device=device)
    dense = torch.empty([shape[p] for p in perm], dtype=dtype, device=device)
    return dense.permute([perm.index(d) for d in range(len(perm))])


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


def _piece_extents(desc: TensorDesc, index: int, extent: int, mesh_sizes: dict[ParallelType, int]) -> list[int]:
    """Extents of an axis' pieces for a global extent `extent` (resolving DYNAMIC pieces)."""
    pieces = desc.axes[index].pieces
    extents = [mesh_sizes.get(p.parallel, p.extent) if p.parallel.is_device else p.extent for p in pieces]
    if len(extents) == 1:
        return [extent]
    known = 1
    for e in extents:
        known *= 1 if e == DYNAMIC else e
    return [extent // known if e == DYNAMIC else e for e in extents]


def _shard_index(desc: TensorDesc, global_shape: Sequence[int], rank: int):
    """(piece shape, index tuple) that picks `rank`'s shard out of the global tensor
    reshaped into its pieces; a device-parallel piece is narrowed to this rank's slot."""
    mesh = desc.mesh
    sizes = {pt: mesh.axis_size(pt) for pt in (ParallelType.DIDX, ParallelType.DIDY)} if mesh else {}
    piece_shape: list[int] = []
    index: list[slice] = []
    for k, axis_index in enumerate(value_positions(desc)):
        extents = _piece_extents(desc, axis_index, global_shape[k], sizes)
        for piece, extent in zip(desc.axes[axis_index].pieces, extents):
            piece_shape.append(extent)
            if piece.parallel.is_device and mesh is not None:
                position = mesh.index_along(rank, piece.parallel)
                index.append(slice(position, position + 1))
            else:
                index.append(slice(None))
    return piece_shape, tuple(index)


def _check_shardable(desc: TensorDesc) -> None:
    if desc.stream_allocated:
        raise ValueError("a stream-allocated tensor holds one stream chunk at a time; it has no fixed shard")


def shard_tensor(global_tensor: torch.Tensor, tensor_type: TensorType, rank: int) -> torch.Tensor | None:
    """Rank `rank`'s local shard of `global_tensor` (None when the rank is not in the mesh),
    laid out in the type's allocation order."""
    desc = _desc(tensor_type)
    _check_shardable(desc)
    if not is_on_rank(desc, rank):
        return None
    expected = desc.value_shape()
    if global_tensor.dim() != len(expected) or any(e not in (DYNAMIC, g) for e, g in zip(expected, global_tensor.shape)):
        raise ValueError(f"global tensor of shape {list(global_tensor.shape)} does not fit type {tensor_type}")
    piece_shape, index = _shard_index(desc, global_tensor.shape, rank)
    local = global_tensor.reshape(piece_shape)[index]
    shape = _merge(local.shape, desc)
    result = empty_buffer(tensor_type, rank, global_tensor.device, shape)
    return result.copy_(local.reshape(shape))


def _merge(piece_shape: Sequence[int], desc: TensorDesc) -> list[int]:
    """Logical extents from the extents of every axis' pieces."""
    merged, k = [], 0
    for axis_index in value_positions(desc):
        extent = 1
        for _ in desc.axes[axis_index].pieces:
            extent *= piece_shape[k]
            k += 1
        merged.append(int(extent))
    return merged


def unshard(shards_by_rank: Sequence[torch.Tensor | None] | Mapping[int, torch.Tensor | None], tensor_type: TensorType) -> torch.Tensor:
    """The global tensor assembled from every rank's local shard (inverse of shard_tensor).

    `shards_by_rank` is indexed by world rank. Replicated data (an unsharded tensor, or a
    mesh axis the tensor is not sharded along) is taken from the first rank holding it.
    """
    shards = dict(shards_by_rank) if isinstance(shards_by_rank, Mapping) else dict(enumerate(shards_by_rank))
    desc = _desc(tensor_type)
    _check_shardable(desc)
    ranks = [r for r in (desc.mesh.devices if desc.mesh else sorted(shards)) if shards.get(r) is not None]
    if not ranks:
        raise ValueError(f"no rank holds a shard of {tensor_type}")
    first = shards[ranks[0]]
    if not desc.is_sharded():
        return first.clone()
    global_shape = [s if e == DYNAMIC else e for e, s in zip(desc.value_shape(), _global_guess(first, desc))]
    result = torch.empty(global_shape, dtype=first.dtype, device=first.device)
    for rank in ranks:
        piece_shape, index = _shard_index(desc, global_shape, rank)
        view = result.view(piece_shape)[index]
        view.copy_(shards[rank].reshape(view.shape))
    return result


def _global_guess(local: torch.Tensor, desc: TensorDesc) -> list[int]:
    """Global extents of a (possibly dynamic) type from one local shard."""
    mesh = desc.mesh
    shape = []
    for k, axis_index in enumerate(value_positions(desc)):
        factor = 1
        for piece in desc.axes[axis_index].pieces:
            if piece.parallel.is_device and mesh is not None:
                factor *= mesh.axis_size(piece.parallel)
        shape.append(local.shape[k] * factor)
    return shape
