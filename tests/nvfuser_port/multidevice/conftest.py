"""The fixtures of nvFuser's tests/python/multidevice/conftest.py, for hostir.

The tests here are nvFuser's multi-device Python tests as nvFuser writes them (only their
imports changed: `import hostir as nvfuser`). They run on every rank of a world:
`tests/nvfuser_port/runner.py` spawns the ranks (gloo on CPUs, NCCL on GPUs) and runs them
there; under torchrun, `HOSTIR_NVFUSER_PORT=1 torchrun --nproc-per-node 2 -m pytest
tests/nvfuser_port/multidevice` runs them too (the ranks join torchrun's world). Outside
a world they are not collected: a single process would run each as a world of one.
"""

import os

import pytest
import torch
import torch.distributed as dist

import hostir as nvfuser
from hostir import runtime

if not os.environ.get("HOSTIR_NVFUSER_PORT"):
    collect_ignore_glob = ["test_*.py"]


def pytest_configure(config):
    config.addinivalue_line("markers", "mpi: nvFuser's multi-process tests (all of these)")
    config.addinivalue_line("markers", "benchmark: nvFuser's benchmarks (sizes for GPUs; not run on CPU ranks)")
    config.addinivalue_line("markers", "cpu_twin: a `gpu` test on CPU ranks (test_cpu_twins.py; on GPUs the test itself runs)")


class MultideviceTest:
    """nvFuser's fixture: the communicator, and unsharded data sharded for this rank on
    this rank's device (a GPU under NCCL, the CPU under gloo)."""

    def __init__(self):
        os.environ["NVIDIA_TF32_OVERRIDE"] = "0"
        self._communicator = nvfuser.multidevice.Communicator.instance()
        self.device = torch.device("cuda", self.local_rank) if _on_gpus() else torch.device("cpu")
        if self.device.type == "cuda":
            torch.cuda.set_device(self.device)
        # This way, when individual tests create unsharded input, each rank
        # receives the same data.
        torch.manual_seed(0)

    @property
    def communicator(self):
        return self._communicator

    @property
    def size(self):
        return self._communicator.size()

    @property
    def rank(self):
        return self._communicator.rank()

    @property
    def local_size(self):
        return self._communicator.local_size()

    @property
    def local_rank(self):
        return self._communicator.local_rank()

    def shard_tensor_1d(self, t: torch.Tensor, dim: int, mesh) -> torch.Tensor:
        assert t.is_cpu
        return mesh.shard_tensor(t, dim).to(self.device)

    def shard_tensor(self, t: torch.Tensor, tv) -> torch.Tensor:
        assert t.is_cpu
        return nvfuser.multidevice.shard_tensor(t, tv).to(self.device)


def _on_gpus() -> bool:
    return dist.is_initialized() and dist.get_backend() == "nccl"


@pytest.fixture
def multidevice_test():
    fixture = MultideviceTest()
    yield fixture
    fixture.communicator.barrier()


@pytest.fixture(scope="session")
def setup_default_process_group():
    """nvFuser's fixture initializes torch.distributed; the ranks here are in a world already."""
    assert runtime.join_torchrun_world(), "run these tests on ranks (tests/nvfuser_port/runner.py)"
    yield


class _Benchmark:
    """pytest-benchmark's `pedantic`, run without timing: what nvFuser's tests benchmark is
    run as they would run it."""

    def pedantic(self, function, setup=None, rounds=1, **_):
        for _ in range(rounds):
            args, kwargs = setup() if setup is not None else ((), {})
            function(*args, **kwargs)


@pytest.fixture
def benchmark():
    return _Benchmark()
