"""Running host programs on N ranks: spawned local processes, or this process inside an
existing torchrun world.

`launch(fn, world_size)` starts `world_size` processes (torch.multiprocessing, start method
forkserver: each rank forks from a server that imported the runtime once) that join one
torch.distributed world, calls `fn(rank, world_size, *args)` in each and returns every
rank's result. Nobody else can reach the launch (docs/security.md): the ranks meet in a
`FileStore` of its private (0700) directory, where they also leave their results, and
their own connections listen on the loopback interface only. As soon as a rank fails --
it raises, is killed, crashes, or times out in a collective -- the others are killed and
`SpmdError` names that rank and what happened to it; a launch that outlives `timeout` is
killed too, so nothing hangs and no process outlives the launch. Collectives time out
after `collective_timeout` seconds (a rank blocked on a peer that never posts fails
instead of waiting).

Starting processes still costs a world's setup, so `run_spmd_batch` runs many programs
(`Job`s) in one launch; `run_spmd` is the one-program form.
"""

from __future__ import annotations

import datetime
import gc
import io
import json
import multiprocessing.connection
import os
import signal
import tempfile
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch
import torch.distributed as dist
import torch.multiprocessing as mp
from xdsl.dialects.builtin import ModuleOp

from hostir import passes
from hostir.passes.pipeline import check_seconds
from hostir_dialect.context import parse_module
from hostir_dialect.diagnostics import HostIRError, located_text
from hostir_dialect.symbols import programs

from .compile import DEFAULT_NUMBER_OF_STREAMS
from .evaluator import Evaluator
from .executor_cache import LruCache
from .graphs import release_cuda_graphs
from .reference import run_fusion
from .trace import Trace, traced_run

# Ranks fork from a server process that imported the runtime (torch included) once, instead
# of each importing it anew (seconds per rank); it never touches CUDA, so the ranks may.
mp.get_context("forkserver").set_forkserver_preload(["hostir.runtime"])


class SpmdError(RuntimeError):
    """A multi-rank run failed: which rank, and why. `completed`: the results of the
    pieces of work every rank had finished and kept (`keep_progress`), in order, up to
    the first one a rank lacks ([piece][rank])."""

    def __init__(self, message: str, completed: list[list] | None = None):
        super().__init__(message)
        self.completed = completed or []


@dataclass
class Reference:
    """A fusion whose eager outputs rank 0 computes after a job's runs (`run_fusion` on
    the global inputs), so that the launch's timeout bounds it too."""

    module: str
    name: str
    inputs: Sequence[torch.Tensor]

    def outputs(self) -> list:
        return run_fusion(parse_module(self.module, "<reference>"), self.inputs, self.name)


@dataclass
class Job:
    """One program to run on every rank: its text, and each rank's (local) inputs."""

    program: str
    inputs: Sequence[Sequence[Any]]
    """inputs[rank] = that rank's list of local input tensors (None where it holds none)."""
    name: str | None = None
    number_of_streams: int = DEFAULT_NUMBER_OF_STREAMS
    repeat: int = 1
    record_streams: bool = False
    cuda_graph: bool | None = None
    """`Evaluator`'s option (None: a graph on GPUs wherever the program is capturable)."""
    trace: bool = False
    """Trace one more run after the timed ones (`RankResult.trace`)."""
    unit_backend: str | None = None
    """How kernel units run (`Evaluator`'s option; None: the device's default)."""
    copy_engine_streams: int = 1
    """`Evaluator`'s option: communication streams per phase of copy-engine collectives."""
    refusal_is_a_result: bool = False
    """A located refusal while the program compiles is this job's result
    (`RankResult.refusal`) instead of failing the launch, so that the other jobs still run:
    refusals are decided from the program text, so every rank refuses alike (a rank that
    does not would wait for the others in its first collective, up to the time limit)."""
    reference: Reference | None = None
    """Computed by rank 0 after the runs (`RankResult.reference`)."""


@dataclass
class RankResult:
    outputs: list
    """This rank's local outputs of the last run, on CPU."""
    times: list[float]
    """Wall seconds of every run (device work included)."""
    stream_log: list[tuple[str, int]] | None
    graph_mode: str = "eager"
    """How the runs executed (`Evaluator.graph_mode`)."""
    trace: Trace | None = None
    reference: list | None = None
    """Rank 0's: the job's reference outputs, when it has a reference."""
    refusal: str | None = None
    """Why the program was refused while it compiled (`Job.refusal_is_a_result`); no runs."""


BACKENDS = ("gloo", "nccl")

DEFAULT_MAX_WORLD = 16
"""The most CPU ranks a launch spawns unless told otherwise (`max_world`, hostir-run
--max-world): each is a process of some 200 MB, and a program asks for a world of its
largest device id + 1, which one mesh of a tiny file can make 2**63. On GPUs the bound
is the number of GPUs (one per rank)."""


def default_backend(world_size: int) -> str:
    cuda = torch.cuda.is_available() and torch.cuda.device_count() >= world_size
    return "nccl" if cuda else "gloo"


def check_backend(backend: str, world_size: int) -> None:
    if backend not in BACKENDS:
        raise ValueError(f"unknown backend {backend!r}; use one of {', '.join(BACKENDS)}")
    if backend == "nccl" and torch.cuda.device_count() < world_size:
        raise ValueError(f"backend nccl needs {world_size} GPUs (one per rank), found {torch.cuda.device_count()}")


def check_world(world_size: int, backend: str, max_world: int = DEFAULT_MAX_WORLD) -> None:
    """Refuse a world this machine cannot hold: more ranks than GPUs on nccl, more than
    `max_world` CPU ranks on gloo."""
    if world_size < 1:
        raise ValueError(f"world size must be at least 1, got {world_size}")
    check_backend(backend, world_size)
    if backend == "gloo" and world_size > max_world:
        raise ValueError(f"a world of {world_size} CPU ranks is more than max_world={max_world} allows")


def device_for(backend: str, rank: int) -> torch.device:
    if backend == "nccl":
        return torch.device("cuda", rank % torch.cuda.device_count())
    return torch.device("cpu")


TORCHRUN_VARIABLES = ("RANK", "WORLD_SIZE", "MASTER_ADDR", "MASTER_PORT")
"""What torchrun (and mpirun wrappers, SLURM scripts) set for torch.distributed's env://."""


def join_torchrun_world() -> bool:
    """Join the torch.distributed world this process was started in, if it was started by
    torchrun (or anything setting RANK, WORLD_SIZE, MASTER_ADDR and MASTER_PORT) and has not
    joined yet: NCCL with one GPU per local rank where there are enough, else gloo. True
    when a world is initialized afterwards."""
    if dist.is_initialized():
        return True
    if not dist.is_available() or not all(name in os.environ for name in TORCHRUN_VARIABLES):
        return False
    local_rank = int(os.environ.get("LOCAL_RANK", os.environ["RANK"]))
    local_world = int(os.environ.get("LOCAL_WORLD_SIZE", os.environ["WORLD_SIZE"]))
    backend = "nccl" if torch.cuda.is_available() and torch.cuda.device_count() >= local_world else "gloo"
    if backend == "nccl":
        torch.cuda.set_device(local_rank)
    dist.init_process_group(backend)
    return True


# --------------------------------------------------------------------------- #
# Running jobs on this rank
# --------------------------------------------------------------------------- #


def run_jobs(rank: int, world_size: int, jobs: Sequence[Job], keep_progress: bool = False) -> list[RankResult]:
    """Run every job on this rank of an initialized world (all ranks run the same jobs);
    with `keep_progress`, each job's result is kept as it finishes (`keep`)."""
    results = _jobs_run(rank, world_size, jobs)
    return [keep(index, result) if keep_progress else result for index, result in enumerate(results)]


def _jobs_run(rank: int, world_size: int, jobs: Sequence[Job]) -> Iterator[RankResult]:
    """Each job's result on this rank, job after job."""
    device = device_for(dist.get_backend(), rank) if dist.is_initialized() else torch.device("cpu")
    for job in jobs:
        try:
            evaluator = Evaluator(parse_module(job.program, "<job>"), name=job.name, rank=rank, world_size=world_size,
                                  number_of_streams=job.number_of_streams, device=device,
                                  record_streams=job.record_streams, cuda_graph=job.cuda_graph, trace=job.trace,
                                  unit_backend=job.unit_backend, copy_engine_streams=job.copy_engine_streams)
        except HostIRError as error:
            if not job.refusal_is_a_result:
                raise
            yield RankResult([], [], None, refusal=str(error))
            continue
        inputs = [x.to(device) if isinstance(x, torch.Tensor) else x for x in job.inputs[rank]]
        times, outputs = [], []
        for _ in range(max(job.repeat, 1)):
            start = time.perf_counter()
            outputs = evaluator.run(inputs)
            if device.type == "cuda":
                torch.cuda.synchronize(device)
            times.append(time.perf_counter() - start)
        trace = traced_run(evaluator, inputs)[1] if job.trace else None
        expected = job.reference.outputs() if job.reference is not None and rank == 0 else None
        yield RankResult([_to_cpu(x) for x in outputs], times, evaluator.stream_log, evaluator.graph_mode, trace,
                         expected)


_PROGRESS_DIR: Path | None = None
"""In a spawned rank: the launch's private directory, where `keep` writes."""


def _keep_progress_in(directory: Path) -> None:
    global _PROGRESS_DIR
    _PROGRESS_DIR = directory


def keep(index: int, result: Any) -> Any:
    """In a spawned rank, keep the result of the `index`-th piece of its work, and return
    it: if the launch fails later, what every rank kept comes back with the error
    (SpmdError.completed). Outside a launch, nothing is kept."""
    if _PROGRESS_DIR is not None:
        path = _PROGRESS_DIR / f"rank{dist.get_rank()}.part{index}.pt"
        # Written whole and renamed: a rank stopped while writing leaves no half file.
        torch.save(result, path.with_suffix(".partial"))
        path.with_suffix(".partial").replace(path)
    return result


def _to_cpu(value: Any) -> Any:
    return value.detach().cpu().clone() if isinstance(value, torch.Tensor) else value


# --------------------------------------------------------------------------- #
# Spawning
# --------------------------------------------------------------------------- #


LOOPBACK = {"GLOO_SOCKET_IFNAME": "lo", "NCCL_SOCKET_IFNAME": "lo"}
"""The interface the ranks' own connections listen on, unless the user named one: all
ranks of a launch are on this machine, and nothing outside it may reach them."""


def _worker(rank: int, world_size: int, backend: str, result_dir: str, fn: Callable, serialized_args: bytes,
            collective_timeout: float, launch_timeout: float) -> None:
    os.environ.update(RANK=str(rank), WORLD_SIZE=str(world_size), LOCAL_RANK=str(rank))
    for name, value in LOOPBACK.items():
        os.environ.setdefault(name, value)
    finished = False
    try:
        if backend == "nccl":
            torch.cuda.set_device(device_for(backend, rank))
        args = torch.load(io.BytesIO(serialized_args), weights_only=False)  # after set_device: CUDA tensors come back on their device
        # The ranks meet in a file of the launch's private directory, not a TCP store,
        # which would serve every interface to anyone, unauthenticated (docs/security.md).
        store = dist.FileStore(str(Path(result_dir) / "store"), world_size)
        dist.init_process_group(backend, store=store, rank=rank, world_size=world_size,
                                timeout=datetime.timedelta(seconds=collective_timeout))
        # A rank that is done waits for the others as long as the launch may last: with
        # the collective timeout it would give up first and close its connections, and a
        # peer still blocked in a collective would report "connection closed" instead of
        # its own timeout (the launcher stops everyone as soon as a rank fails).
        finish_line = dist.new_group(backend="gloo", timeout=datetime.timedelta(seconds=launch_timeout))
        _keep_progress_in(Path(result_dir))
        result = fn(rank, world_size, *args)
        torch.save(result, Path(result_dir) / f"rank{rank}.pt")
        finished = True
        dist.barrier(group=finish_line)
        # CUDA graphs that captured NCCL collectives hold the communicators: free them first,
        # those of evaluators still alive (cached by `fn`'s FusionDefinitions) included.
        release_cuda_graphs()
        gc.collect()
        dist.destroy_process_group()
    except BaseException as error:
        message = str(error).strip().splitlines()[0] if str(error).strip() else ""
        # A rank that finished its work and then timed out waiting for the others is a
        # victim, not the culprit: `_failure` reports it only if no rank failed working.
        record = {"finished": finished, "time": time.time(),
                  "message": f"{type(error).__name__}: {message}".rstrip(": ")}
        # Written whole and renamed: the launcher may read it while other ranks still write theirs.
        partial = Path(result_dir) / f"rank{rank}.err.partial"
        partial.write_text(json.dumps(record))
        partial.replace(Path(result_dir) / f"rank{rank}.err")
        raise


def launch(fn: Callable, world_size: int, args: tuple = (), *, backend: str | None = None,
           timeout: float = 300, collective_timeout: float = 60, max_world: int = DEFAULT_MAX_WORLD) -> list:
    """`fn(rank, world_size, *args)` on `world_size` spawned ranks: every rank's result.

    `fn` must be a module-level function (it is pickled into the spawned processes).
    Everything checkable here is checked before a process is spawned (`check_world`)."""
    if "<" in getattr(fn, "__qualname__", "<"):  # <lambda>, <locals>: pickled by name, found by none
        raise TypeError(f"fn must be a module-level function, picklable into the spawned ranks; got {fn!r}")
    backend = backend or default_backend(world_size)
    check_world(world_size, backend, max_world)
    check_seconds("timeout", timeout)
    check_seconds("collective_timeout", collective_timeout)
    with tempfile.TemporaryDirectory(prefix="hostir-spmd-") as result_dir:
        context = mp.start_processes(
            # The arguments travel as bytes: torch's multiprocessing pickler would pass every
            # tensor's storage as a file descriptor, and the forkserver takes fewer than 256
            # per process (a batch of jobs holds more tensors than that); torch.save's, not
            # pickle's, which cannot rebuild a uint64 tensor (a philox seed).
            _worker, args=(world_size, backend, result_dir, fn, _as_bytes(args), collective_timeout, timeout),
            nprocs=world_size, join=False, start_method="forkserver",
        )
        failure = None
        try:
            _wait(context.processes, Path(result_dir), timeout)
        except SpmdError as error:
            failure = error
        finally:
            # Whatever happened (a rank failed, the launch timed out, the caller was
            # interrupted), no rank outlives the launch.
            _kill(context)
        if failure is not None:
            failure.completed = _kept(Path(result_dir), world_size)  # every rank stopped: what they kept is whole
            raise failure
        return [torch.load(Path(result_dir) / f"rank{r}.pt", weights_only=False) for r in range(world_size)]


def _kept(result_dir: Path, world_size: int) -> list[list]:
    """What every rank kept (`keep`), piece by piece, up to the first piece a rank lacks."""
    kept: list[list] = []
    while all((result_dir / f"rank{r}.part{len(kept)}.pt").exists() for r in range(world_size)):
        index = len(kept)
        kept.append([torch.load(result_dir / f"rank{r}.part{index}.pt", weights_only=False) for r in range(world_size)])
    return kept


def _wait(processes: Sequence, result_dir: Path, timeout: float) -> None:
    """Until every rank has finished; SpmdError as soon as one fails or time is up."""
    deadline = time.monotonic() + timeout
    while True:
        exit_codes = {rank: p.exitcode for rank, p in enumerate(processes) if p.exitcode is not None}
        failed = {rank: code for rank, code in exit_codes.items()
                  if code != 0 or not (result_dir / f"rank{rank}.pt").exists()}
        if failed:
            raise SpmdError(_failure(result_dir, failed, processes))
        if len(exit_codes) == len(processes):
            return
        if time.monotonic() > deadline:
            raise SpmdError(f"the {len(processes)} rank(s) did not finish within {timeout:g} s and were stopped")
        multiprocessing.connection.wait([p.sentinel for p in processes if p.exitcode is None], timeout=0.2)


def _kill(context) -> None:
    for process in context.processes:
        if process.is_alive():
            process.kill()
        process.join(timeout=5)
    for path in context.error_files:  # torch's tracebacks of raising ranks: ours are in result_dir
        Path(path).unlink(missing_ok=True)


def _failure(result_dir: Path, failed: dict[int, int], processes: Sequence) -> str:
    """Which rank failed first, and how: from the ranks that have exited (`failed`) and
    the records every rank writes as it fails.

    A rank that died without leaving a record (killed by a signal, or crashed) is the
    culprit: the others can only have failed because it disappeared. Otherwise it is the
    rank whose record is the earliest among those that failed working (a rank that
    finished and then timed out waiting for the others is a victim).
    """
    died = sorted(rank for rank in failed if not (result_dir / f"rank{rank}.err").exists())
    if died:
        rank = died[0]
        return f"rank {rank} failed: {_death(failed[rank])} (pid {processes[rank].pid})"
    # Every rank's record counts, exited or not: the culprit writes its record before its
    # connections close, but its peers, failing because they closed, may exit first.
    records = []
    for rank in (r for r in range(len(processes)) if (result_dir / f"rank{r}.err").exists()):
        record = json.loads((result_dir / f"rank{rank}.err").read_text())
        records.append((record["finished"], record["time"], rank, record["message"]))
    *_, rank, message = min(records)
    return f"rank {rank} failed: {message}"


def _death(exit_code: int) -> str:
    if exit_code < 0:
        try:
            return f"killed by signal {signal.Signals(-exit_code).name}"
        except ValueError:
            return f"killed by signal {-exit_code}"
    if exit_code == 0:
        return "exited without a result"
    return f"exited with code {exit_code} without reporting an error"


# --------------------------------------------------------------------------- #
# Programs
# --------------------------------------------------------------------------- #


_LOWERED: LruCache[ModuleOp] = LruCache(capacity=32)
"""Fusions lowered by `lower_module`, by their text."""


def lower_module(module: ModuleOp) -> ModuleOp:
    """A copy of `module` lowered by the `hostir-lower` pipeline (lowered once per text)."""
    return _LOWERED.get(str(module), lambda: passes.lower(module.clone())).clone()


def as_module(module_or_fd: Any, lower: bool = False) -> ModuleOp:
    """A module from a ModuleOp, IR text, a path to a .mlir file or a FusionDefinition
    (anything with `to_module()`); lowered first when `lower`."""
    if isinstance(module_or_fd, ModuleOp):
        module = module_or_fd
    elif isinstance(module_or_fd, (str, os.PathLike)) and Path(module_or_fd).suffix == ".mlir":
        module = parse_module(Path(module_or_fd).read_text(), str(module_or_fd))
    elif hasattr(module_or_fd, "to_module"):
        module = module_or_fd.to_module()
    elif isinstance(module_or_fd, str):
        module = parse_module(module_or_fd)
    else:
        raise TypeError(f"expected a ModuleOp, IR text, a .mlir path or a FusionDefinition, got {module_or_fd!r}")
    return lower_module(module) if lower else module


def _as_bytes(args: tuple) -> bytes:
    buffer = io.BytesIO()
    torch.save(args, buffer)
    return buffer.getvalue()


def run_spmd_batch(jobs: Sequence[Job], world_size: int, *, backend: str | None = None, timeout: float = 300,
                   collective_timeout: float = 60, max_world: int = DEFAULT_MAX_WORLD,
                   keep_progress: bool = False) -> list[list[RankResult]]:
    """Run every job on `world_size` spawned ranks, in one launch: results[job][rank].
    `keep_progress`: each job's results are kept as every rank finishes it, so that a
    failing launch's SpmdError holds those of the jobs before the failure (`completed`,
    [job][rank]), and a caller can go on from there instead of starting over."""
    for job in jobs:
        if len(job.inputs) != world_size:
            raise ValueError(f"a job has inputs for {len(job.inputs)} ranks but the world has {world_size}")
    per_rank = launch(run_jobs, world_size, (list(jobs), keep_progress), backend=backend, timeout=timeout,
                      collective_timeout=collective_timeout, max_world=max_world)
    return [[per_rank[r][j] for r in range(world_size)] for j in range(len(jobs))]


def run_spmd(module_or_fd: Any, per_rank_inputs: Sequence[Sequence[Any]], world_size: int, *,
             backend: str | None = None, number_of_streams: int = DEFAULT_NUMBER_OF_STREAMS, lower: bool = False, name: str | None = None,
             timeout: float = 300, collective_timeout: float = 60, max_world: int = DEFAULT_MAX_WORLD) -> list[list]:
    """Run one program on `world_size` spawned ranks: every rank's list of local outputs.

    A fusion runs lowered (`lower=True`): its eager reference semantics are for global
    tensors, and each rank holds shards. More than `max_world` CPU ranks are refused."""
    check_world(world_size, backend or default_backend(world_size), max_world)
    module = as_module(module_or_fd, lower)
    if not programs(module):
        raise ValueError("run_spmd runs host programs; pass lower=True to lower a fusion first")
    text = located_text(module)
    job = Job(text, per_rank_inputs, name=name, number_of_streams=number_of_streams)
    results = run_spmd_batch([job], world_size, backend=backend, timeout=timeout,
                             collective_timeout=collective_timeout, max_world=max_world)[0]
    return [r.outputs for r in results]
