"""nvFuser's `nvfuser.multidevice` for hostir: the communicator of this process's
torch.distributed world, device meshes that shard torch tensors, and nvFuser's executor
of a multi-device fusion.

    import hostir as nvfuser
    mesh = nvfuser.multidevice.DeviceMesh(torch.arange(world_size))
    shard = mesh.shard_tensor(unsharded, 0)            # this rank's part along axis 0
    shard = nvfuser.multidevice.shard_tensor(unsharded, tv)   # as tv is sharded
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass
from enum import Enum

import torch
import torch.distributed as dist

from hostir import runtime
from hostir.definition import FusionDefinition
from hostir_dialect import DeviceMesh as MeshIR
from hostir_dialect.frontend import FusionView, Tensor


class Communicator:
    """The world of this process (nvFuser's `Communicator.instance()`): a torch.distributed
    world, joined from torchrun's environment if need be, or a single rank."""

    _instance: Communicator | None = None

    @classmethod
    def instance(cls) -> Communicator:
        if cls._instance is None:
            runtime.join_torchrun_world()
            cls._instance = cls()
        return cls._instance

    def size(self) -> int:
        return dist.get_world_size() if dist.is_initialized() else 1

    def rank(self) -> int:
        return dist.get_rank() if dist.is_initialized() else 0

    def local_size(self) -> int:
        return int(os.environ.get("LOCAL_WORLD_SIZE", self.size()))

    def local_rank(self) -> int:
        return int(os.environ.get("LOCAL_RANK", self.rank()))

    def barrier(self) -> None:
        if dist.is_initialized():
            dist.barrier()


class DeviceMesh(MeshIR):
    """nvFuser's `multidevice.DeviceMesh`: the frontend's mesh, which also shards a tensor."""

    def shard_tensor(self, tensor: torch.Tensor, dim: int) -> torch.Tensor:
        """This rank's part of `tensor` split evenly along `dim` over a 1-D mesh."""
        if len(self.shape) != 1:
            raise ValueError(f"shard_tensor(tensor, dim) shards over a 1-D mesh; {self} has shape {list(self.shape)}")
        rank = Communicator.instance().rank()
        if rank not in self.device_ids:
            raise ValueError(f"rank {rank} is not in {self}")
        if tensor.shape[dim] % self.size:
            raise ValueError(f"axis {dim} of extent {tensor.shape[dim]} does not split evenly over {self.size} devices")
        return tensor.chunk(self.size, dim)[self.device_ids.index(rank)]


def shard_tensor(tensor: torch.Tensor, tv: Tensor) -> torch.Tensor:
    """This rank's shard of the unsharded `tensor`, as `tv` is scheduled (its mesh, splits
    and parallel types, its allocation order)."""
    shard = runtime.shard_tensor(tensor, tv.type, Communicator.instance().rank())
    if shard is None:
        raise ValueError(f"rank {Communicator.instance().rank()} is not in the mesh of {tv.name}")
    return shard


class CommunicatorBackend(Enum):
    """nvFuser's communicator backends: NCCL, or CUDA copy engines (hostir's copy-engine transport)."""

    nccl = "nccl"
    cuda = "copy-engine"


@dataclass
class MultiDeviceExecutorParams:
    """nvFuser's executor options; hostir reads the backend (`use_allocation_cache` and
    `offset_stream_indexing_by_rank` are what hostir always does: buffers are allocated by
    the program, and a ring loop starts at each rank's own chunk)."""

    backend_type: CommunicatorBackend = CommunicatorBackend.nccl
    use_allocation_cache: bool = False
    offset_stream_indexing_by_rank: bool = False


class MultiDeviceExecutor:
    """nvFuser's executor of `fd.fusion` on this rank: lowered by `hostir-lower` with the
    backend's transport, compiled once, run by `run(inputs)`. A `hostir.FusionDefinition`
    runs through its `execute`, so a fusion of dynamic extents is lowered for the run's
    extents there too (the copy engines size their buffers when lowering)."""

    def __init__(self, fusion: FusionView, params: MultiDeviceExecutorParams | None = None):
        params = params or MultiDeviceExecutorParams()
        self.definition = fusion.definition
        self.pipeline = f"hostir-lower{{transport={params.backend_type.value}}}"
        self._evaluator: runtime.Evaluator | None = None

    def run(self, inputs: Sequence[object]) -> list:
        if isinstance(self.definition, FusionDefinition):
            return self.definition.execute(inputs, pipeline=self.pipeline)
        if self._evaluator is None:
            runtime.join_torchrun_world()
            from hostir import passes

            self._evaluator = runtime.Evaluator(passes.lower(self.definition.to_module(), pipeline=self.pipeline))
        return self._evaluator.run(list(inputs))
