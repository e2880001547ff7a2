"""The hostir runtime: a torch-backed evaluator of fusion and host IR, the communicator
(torch.distributed), the multi-rank launcher and the `hostir-run` entry point."""

from .evaluator import Evaluator, ExecutionError, InputError, compile_program
from .executor_cache import ExecutorCache, execute
from .graphs import release_cuda_graphs
from .launcher import Job, RankResult, SpmdError, join_torchrun_world, launch, run_spmd, run_spmd_batch
from .layouts import shard_tensor, unshard
from .reference import run_fusion

__all__ = [
    "Evaluator", "ExecutionError", "ExecutorCache", "InputError", "Job", "RankResult", "SpmdError", "compile_program", "execute", "launch",
    "join_torchrun_world", "release_cuda_graphs", "run_fusion", "run_spmd", "run_spmd_batch", "shard_tensor", "unshard",
]
