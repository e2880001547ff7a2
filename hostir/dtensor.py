"""PyTorch DTensor in and out of a fusion (nvFuser's `execute_with_dtensors`).

Each input DTensor's mesh and placements become its fusion input's sharding (an input the
user scheduled already must agree): mesh dimension i of an n-D mesh is hostir's device type
DEVICE_KINDS[n - 1 - i] (the last mesh dimension is DIDx, as in nvFuser), and `Shard(d)`
splits axis d outer by that dimension's size and parallelizes the outer part (a later mesh
dimension sharding the same axis nests inside, as in DTensor). The fusion runs on the local
tensors, and each output comes back as a DTensor on its mesh (the inputs' DeviceMesh where
the device ids agree, so mesh dimension names carry over) with the placements of its
lowered type.
"""

from __future__ import annotations

from collections.abc import Sequence

import torch
from torch.distributed.device_mesh import DeviceMesh as TorchMesh
from torch.distributed.tensor import DTensor
from torch.distributed.tensor.placement_types import Placement, Replicate, Shard

from hostir_dialect import DeviceMesh, FusionDefinitionError, Tensor, TensorType
from hostir_dialect.tensor_type import DEVICE_KINDS, Mesh


def execute_with_dtensors(fd, in_dtensors: Sequence[DTensor]) -> list[DTensor]:
    """Run `fd` (a `hostir.FusionDefinition`) on DTensors; its outputs as DTensors."""
    inputs = fd.fusion.inputs()
    if len(in_dtensors) != len(inputs):
        raise ValueError(f"the fusion takes {len(inputs)} inputs, got {len(in_dtensors)} DTensors")
    names = {d.device_mesh.mesh_dim_names for d in in_dtensors}
    if len(names) > 1:
        raise ValueError(f"all DTensor inputs must have the same mesh dim names, got {sorted(map(str, names))}")
    for tv, dtensor in zip(inputs, in_dtensors):
        _schedule_like(tv, dtensor)
    outputs = fd.execute([d.to_local() for d in in_dtensors])
    meshes = {_mesh_of(d.device_mesh): d.device_mesh for d in in_dtensors}
    return [_as_dtensor(out, t, meshes, in_dtensors[0]) for out, t in zip(outputs, fd.output_types())]


def _mesh_of(mesh: TorchMesh) -> Mesh:
    return Mesh.of(mesh.mesh.tolist())


def _placements_of(t: TensorType, what: str) -> list[Placement]:
    """The DTensor placements of a sharded tensor type, one per mesh dimension."""
    assert t.mesh is not None
    placements: list[Placement] = []
    for dim in range(t.mesh.ndim):
        parallel = DEVICE_KINDS[t.mesh.ndim - 1 - dim]
        axis = t.axis_with(parallel, include_reduction=False)
        if axis is None:
            placements.append(Replicate())
            continue
        pieces = t.axes[axis].pieces
        devices = [p for p in pieces if p.parallel.is_device]
        if pieces[: len(devices)] != tuple(devices) or [DEVICE_KINDS.index(p.parallel) for p in devices] != sorted(
            (DEVICE_KINDS.index(p.parallel) for p in devices), reverse=True
        ):
            raise FusionDefinitionError(f"{what} is sharded on an inner piece of axis {axis} ({t}), which no DTensor placement says")
        placements.append(Shard(t.value_position(axis)))
    return placements


def _schedule_like(tv: Tensor, dtensor: DTensor) -> None:
    """Give `tv` the DTensor's mesh and placements, or check that it has them."""
    what = f"input {tv.name}"
    mesh = DeviceMesh(dtensor.device_mesh.mesh.tolist())
    placements = list(dtensor.placements)
    if any(not (p.is_shard() or p.is_replicate()) for p in placements):
        raise FusionDefinitionError(f"{what}: DTensor placements {placements} hold partial values; hostir takes Shard and Replicate")
    if tv.device_mesh is not None:
        expected = _placements_of(tv.type, what)
        if tv.device_mesh != mesh or [_normalized(p, tv.ndim) for p in expected] != [_normalized(p, tv.ndim) for p in placements]:
            raise FusionDefinitionError(f"{what} is scheduled on {tv.device_mesh} as {expected}, but its DTensor is on "
                                        f"{mesh} as {placements}")
        return
    tv.set_device_mesh(mesh)
    ndim = len(mesh.shape)
    for dim, placement in enumerate(placements):
        if placement.is_shard():
            axis = tv._value_axis(placement.dim % tv.ndim)  # type: ignore[attr-defined]
            tv.shard(axis, DEVICE_KINDS[ndim - 1 - dim], mesh.shape[dim])


def _normalized(placement: Placement, rank: int) -> Placement:
    return Shard(placement.dim % rank) if placement.is_shard() else placement  # type: ignore[attr-defined]


def _as_dtensor(local: torch.Tensor, t: TensorType, meshes: dict[Mesh, TorchMesh], like: DTensor) -> DTensor:
    """`local` as the DTensor of an output of type `t`."""
    if t.mesh is None:
        raise FusionDefinitionError(f"an output of type {t} has no mesh, so no DTensor")
    mesh = meshes.get(t.mesh)
    if mesh is None:
        ids = torch.tensor(t.mesh.nested())
        mesh = TorchMesh(like.device_mesh.device_type, ids, mesh_dim_names=like.device_mesh.mesh_dim_names)
    return DTensor.from_local(local, mesh, _placements_of(t, "an output"), run_check=False)
