"""nvFuser's `nvfuser.multidevice` for hostir (hostir/multidevice.py): the executor."""

import pytest
import torch

from hostir import FusionDefinition, ParallelType, runtime
from hostir.multidevice import CommunicatorBackend, DeviceMesh, MultiDeviceExecutor, MultiDeviceExecutorParams


def gather_rows_on_the_copy_engines(rank: int, world_size: int, x: torch.Tensor) -> torch.Tensor:
    """An all-gather of rows of dynamic extent, as nvFuser's tests declare inputs, on the
    copy engines (nvFuser's `CommunicatorBackend.cuda`)."""
    with FusionDefinition() as fd:
        a = fd.define_tensor([-1, 4], dtype="float32")
        gathered = fd.ops.set(a)
        fd.add_output(fd.ops.exp(gathered))
    mesh = DeviceMesh(list(range(world_size)))
    a.set_device_mesh(mesh)
    gathered.set_device_mesh(mesh)
    a.outer_split(0, world_size)
    a.axis(0).parallelize(ParallelType.DIDx)
    params = MultiDeviceExecutorParams()
    params.backend_type = CommunicatorBackend.cuda
    rows = x.shape[0] // world_size
    (out,) = MultiDeviceExecutor(fd.fusion, params).run([x[rank * rows:(rank + 1) * rows]])
    return out


@pytest.mark.parametrize("world", [1, 2])
def test_the_copy_engine_backend_runs_a_fusion_of_dynamic_extents_lowered_for_the_run(world):
    """Of dynamic extents the copy engines refuse it (symmetric buffers are sized when
    lowering); lowered for the run's extents, as `execute` does, it runs."""
    x = torch.randn(8, 4)
    for out in runtime.launch(gather_rows_on_the_copy_engines, world, (x,), backend="gloo"):
        torch.testing.assert_close(out, torch.exp(x))
