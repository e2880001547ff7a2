"""How the benchmarks measure: the torchrun world, timing, reference checks, tables.

Method (every benchmark here):
- every variant is checked before it is timed: fresh random inputs, its preallocated outputs
  filled with NaN, one run, relative Frobenius error against a float64 torch reference, the
  max over ranks (NaN counts as infinite, so it always fails);
- then `warmup` runs, then `repeat` timed runs, each preceded by a barrier and a device
  synchronize; CUDA events around each run on GPUs (the host clock on CPUs);
- the median per rank, then the max over ranks: a run is as slow as its slowest rank;
- then, after one more barrier, `repeat` runs issued back to back (the host ahead of the
  device, as a training loop issues layer after layer), timed as a whole: the time per run,
  max over ranks. A settled run pays its launch and the ranks' start skew in full (a graph
  launch takes 40-100 us of host time before the first kernel starts); back to back
  they are paid once;
- with `rounds` > 1 (`checked_timings`), every variant is built and checked first, and the
  timed runs are then spread over that many rounds. A round takes its share of the settled
  runs one at a time, every variant in turn (a, b, c, a, b, c, ...), then `repeat` runs back
  to back of each variant in turn: a drift of the machine during the launch (clocks,
  temperature, a neighbour) weighs on every variant alike, and no variant's settled runs
  follow another one's block of runs back to back (a round of blocks of settled runs, each
  after the previous variant's back-to-back runs, put AG+matmul 16384x8192x4096 at 1.18x its
  ideal where one variant at a time put it at 1.01x, in one launch, 2x H200, 2026-11-27
  18:10 UTC). The medians are over all rounds; back to back, the median of the rounds'.
"""

from __future__ import annotations

import argparse
import datetime
import math
import os
import platform
import statistics
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import torch
import torch.distributed as dist

from hostir.runtime import release_cuda_graphs
from hostir.runtime.cli import all_gather_json
from hostir.runtime.launcher import device_for

TOLERANCE = {torch.bfloat16: 2e-2, torch.float32: 1e-3}
"""Relative Frobenius error a checked run must stay under (float32: TF32 may be on)."""
DTYPES = {"bf16": torch.bfloat16, "fp32": torch.float32}


# --------------------------------------------------------------------------- #
# The world
# --------------------------------------------------------------------------- #


def join_world() -> tuple[torch.device, bool]:
    """This rank's device, joining the torchrun world unless the caller already did
    (`runtime.launch`); True when this call joined it (and so must leave it)."""
    if dist.is_initialized():
        return device_for(dist.get_backend(), dist.get_rank()), False
    if "RANK" not in os.environ:
        raise SystemExit("start the benchmark with torchrun, e.g. torchrun --nproc-per-node 2 benchmarks/overlap.py")
    local_rank = int(os.environ.get("LOCAL_RANK", 0))
    if torch.cuda.device_count() >= int(os.environ.get("LOCAL_WORLD_SIZE", 1)):
        device = torch.device("cuda", local_rank)
        torch.cuda.set_device(device)
        dist.init_process_group("nccl", device_id=device)
    else:
        device = torch.device("cpu")
        dist.init_process_group("gloo")
    return device, True


def leave_world(joined: bool) -> None:
    """Leave the world if `join_world` joined it: first the CUDA graphs of hostir's
    evaluators still alive, which NCCL's teardown would otherwise wait for forever."""
    if joined:
        release_cuda_graphs()
        dist.destroy_process_group()


def settle(device: torch.device) -> None:
    """Nothing of a previous run is still in flight on any rank."""
    if device.type == "cuda":
        torch.cuda.synchronize(device)
    dist.barrier()
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def max_over_ranks(values: Sequence[float], device: torch.device) -> list[float]:
    # NaN is made infinite first: a max that skips NaN would let a NaN rank pass.
    nan_as_inf = [math.inf if math.isnan(v) else v for v in values]
    tensor = torch.tensor(nan_as_inf, dtype=torch.float64, device=device)
    dist.all_reduce(tensor, op=dist.ReduceOp.MAX)
    return tensor.tolist()


def machine_info(device: torch.device, dtype_name: str) -> dict:
    cuda = device.type == "cuda"
    return {
        "gpu": torch.cuda.get_device_name(device) if cuda else None,
        "gpu_count": torch.cuda.device_count(),
        "world_size": dist.get_world_size(),
        "backend": dist.get_backend(),
        "torch": torch.__version__,
        "nccl": ".".join(map(str, torch.cuda.nccl.version())) if cuda else None,
        "tf32": torch.backends.cuda.matmul.allow_tf32,
        "python": platform.python_version(),
        "dtype": dtype_name,
        "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
    }


def machine_kind(device: torch.device) -> str:
    """`h200x2` for two NVIDIA H200 ranks, `cpux2` for two CPU ranks: result file names."""
    if device.type != "cuda":
        return f"cpux{dist.get_world_size()}"
    words = [w for w in torch.cuda.get_device_name(device).split() if w.upper() != "NVIDIA"]
    model = "".join(ch for ch in (words[0] if words else "gpu") if ch.isalnum()).lower()
    return f"{model}x{dist.get_world_size()}"


# --------------------------------------------------------------------------- #
# Variants, checks, timing
# --------------------------------------------------------------------------- #


@dataclass
class Variant:
    """One way of computing a case, built on this rank with its buffers."""

    run: Callable[[], object]
    result: Callable[[], torch.Tensor]
    """This rank's output of the last run."""
    load: Callable[[object], None]
    """Copy a problem's fresh global inputs into this rank's input buffers."""
    expected: Callable[[object], torch.Tensor]
    """What `result()` must hold for those inputs (same number of elements, same order)."""
    poisoned: Sequence[torch.Tensor] = field(default_factory=tuple)
    """Preallocated outputs, NaN-filled before the checked run. Variants that allocate their
    outputs (hostir programs, torch's fused ops) have none: the fresh inputs of each check
    make stale memory fail it instead."""


def relative_error(result: torch.Tensor, expected: torch.Tensor) -> float:
    got, want = result.double().reshape(-1), expected.double().reshape(-1)
    if got.numel() != want.numel():
        return math.inf
    return ((got - want).norm() / want.norm()).item()


def check(variant: Variant, inputs: object, device: torch.device) -> float:
    """The variant's relative error on `inputs` (max over ranks)."""
    variant.load(inputs)
    for buffer in variant.poisoned:
        buffer.fill_(math.nan)
    settle(device)  # every rank has poisoned before any rank writes into a peer's buffer
    variant.run()
    settle(device)  # every rank's writes have landed before any rank reads
    return max_over_ranks([relative_error(variant.result(), variant.expected(inputs))], device)[0]


@dataclass(frozen=True)
class Timing:
    device_ms: float
    """CUDA events around the run (on CPU: the host clock, as wall_ms)."""
    wall_ms: float
    """Host clock from the start of the run to the end of the device synchronize after it."""
    host_ms: float
    """Host clock around the call alone: the time to issue the run."""
    device_fastest_ms: float
    """The fastest timed run's device_ms; with `device_slowest_ms`, the spread a difference
    between two variants must exceed to mean anything (see "Method" in README.md)."""
    device_slowest_ms: float
    back_to_back_ms: float
    """Per run, of `repeat` runs issued back to back after one settle (events around all of
    them on GPUs; the host clock on CPUs)."""


def time_runs(run: Callable[[], object], device: torch.device, repeat: int, warmup: int) -> Timing:
    """Per rank, the medians over `repeat` settled runs after `warmup` runs, the fastest and
    slowest run's device time and the time per run of `repeat` runs back to back; the max
    over ranks of each."""
    return time_in_rounds({"run": run}, device, repeat, warmup)["run"]


def time_in_rounds(runs: dict[str, Callable[[], object]], device: torch.device, repeat: int, warmup: int,
                   rounds: int = 1) -> dict[str, Timing]:
    """`time_runs` of every run, spread over `rounds` rounds (see the module doc): per run at
    least `repeat` settled runs in all, taken one run of each in turn, and per round `repeat`
    runs back to back. Every rank passes the same names in the same order."""
    for run in runs.values():
        for _ in range(warmup):
            run()
    samples: dict[str, list] = {name: [] for name in runs}
    back_to_back: dict[str, list[float]] = {name: [] for name in runs}
    for _ in range(rounds):
        for _ in range(math.ceil(repeat / rounds)):
            for name, run in runs.items():
                settle(device)
                samples[name].append(_one_run(run, device))
        for name, run in runs.items():
            settle(device)
            back_to_back[name].append(_back_to_back(run, device, repeat))
    return {name: _timing(samples[name], statistics.median(back_to_back[name]), device) for name in runs}


def _timing(samples: list[tuple[float, float, float]], back_to_back: float, device: torch.device) -> Timing:
    """The medians of settled `samples` (device, wall, host ms), the fastest and slowest
    device time and `back_to_back`, each the max over ranks."""
    medians = [statistics.median(column) for column in zip(*samples)]
    device_times = [sample[0] for sample in samples]
    return Timing(*max_over_ranks([*medians, min(device_times), max(device_times), back_to_back], device))


def _one_run(run: Callable[[], object], device: torch.device) -> tuple[float, float, float]:
    if device.type != "cuda":
        start = time.perf_counter()
        run()
        ms = 1e3 * (time.perf_counter() - start)
        return ms, ms, ms
    start_event, end_event = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    start = time.perf_counter()
    start_event.record()
    run()
    issued = time.perf_counter()
    end_event.record()
    torch.cuda.synchronize(device)
    done = time.perf_counter()
    return start_event.elapsed_time(end_event), 1e3 * (done - start), 1e3 * (issued - start)


def _back_to_back(run: Callable[[], object], device: torch.device, runs: int) -> float:
    """ms per run of `runs` runs issued without waiting for any."""
    if device.type != "cuda":
        start = time.perf_counter()
        for _ in range(runs):
            run()
        return 1e3 * (time.perf_counter() - start) / runs
    start_event, end_event = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    start_event.record()
    for _ in range(runs):
        run()
    end_event.record()
    torch.cuda.synchronize(device)
    return start_event.elapsed_time(end_event) / runs


def checked_timing(build: Callable[[], Variant], operands: Callable[[], object], device: torch.device,
                   dtype: torch.dtype, repeat: int, warmup: int) -> dict:
    """Build a variant, check it on `operands()` and, when right, time it, on every rank:
    {"status": "ok", "error": e, "timing": Timing}, {"status": "WRONG <e>", "error": e} or
    {"status": "ERROR", "message": why}."""
    result, variant = checked(build, operands, device, dtype)
    if variant is not None:
        result["timing"] = time_runs(variant.run, device, repeat, warmup)
    return result


def checked_timings(builds: dict[str, Callable[[], Variant]], operands: Callable[[], object], device: torch.device,
                    dtype: torch.dtype, repeat: int, warmup: int, rounds: int = 1) -> dict[str, dict]:
    """`checked_timing` of every variant: one at a time with `rounds` = 1 (each built, checked,
    timed and dropped before the next is built: the least memory); else all built and
    checked first, all alive at once, then timed in `rounds` rounds (`time_in_rounds`)."""
    if rounds == 1:
        return {name: checked_timing(build, operands, device, dtype, repeat, warmup) for name, build in builds.items()}
    results, variants = {}, {}
    for name, build in builds.items():
        results[name], variant = checked(build, operands, device, dtype)
        if variant is not None:
            variants[name] = variant
    timings = time_in_rounds({name: v.run for name, v in variants.items()}, device, repeat, warmup, rounds)
    for name, timing in timings.items():
        results[name]["timing"] = timing
    return results


def checked(build: Callable[[], Variant], operands: Callable[[], object], device: torch.device,
            dtype: torch.dtype) -> tuple[dict, Variant | None]:
    """Build a variant and check it on `operands()`, on every rank: ({"status": "ok", "error":
    e}, the variant) when right, else ({"status": "WRONG <e>", "error": e} or {"status":
    "ERROR", "message": why}, None). The ranks agree after the build and after the check, so
    that a rank that failed alone does not leave the others waiting in a collective."""
    variant, failure = _attempt(build)
    if failure := agreed_failure(failure):
        return {"status": "ERROR", "message": failure}, None
    error, failure = _attempt(lambda: check(variant, operands(), device))
    if failure := agreed_failure(failure):
        return {"status": "ERROR", "message": failure}, None
    if not error < TOLERANCE[dtype]:
        return {"status": f"WRONG {error:.1e}", "error": error}, None
    return {"status": "ok", "error": error}, variant


def _attempt(step: Callable[[], object]) -> tuple[object, str | None]:
    """(step's result, None), or (None, why it raised): reported with the results, and the
    other variants still run."""
    try:
        return step(), None
    except Exception as exception:
        return None, f"{type(exception).__name__}: {exception}".splitlines()[0]


def agreed_failure(message: str | None) -> str | None:
    """The first rank's failure message, on every rank (None when all ranks succeeded), so
    that all ranks agree whether to go on with a variant."""
    messages = all_gather_json(message)
    return next((m for m in messages if m is not None), None)


# --------------------------------------------------------------------------- #
# Output
# --------------------------------------------------------------------------- #


def format_table(header: Sequence[str], rows: Sequence[Sequence[str]]) -> str:
    """Left-aligned first column, right-aligned others, two spaces between columns."""
    widths = [max(len(str(cell)) for cell in column) for column in zip(header, *rows)]
    lines = []
    for row in (header, *rows):
        cells = [str(c).ljust(w) if i == 0 else str(c).rjust(w) for i, (c, w) in enumerate(zip(row, widths))]
        lines.append("  ".join(cells).rstrip())
    return "\n".join(lines)


def add_rounds_argument(parser: argparse.ArgumentParser, what: str, default: int = 1) -> None:
    """`--rounds N` (at least 1): time `what` in N rounds (`checked_timings`)."""
    parser.add_argument("--rounds", type=_rounds, default=default,
                        help=f"time {what} in this many rounds, all built first (measure.py; default {default})")


def _rounds(text: str) -> int:
    if not text.isdigit() or int(text) < 1:
        raise argparse.ArgumentTypeError(f"--rounds must be at least 1, got {text}")
    return int(text)


def parse_shape(text: str) -> tuple[int, int, int]:
    """`16384x8192x4096` -> (M, K, N)."""
    parts = text.lower().split("x")
    if len(parts) != 3 or not all(p.isdigit() for p in parts):
        raise ValueError(f"a shape is MxKxN, e.g. 16384x8192x4096; got {text!r}")
    m, k, n = (int(p) for p in parts)
    return m, k, n
