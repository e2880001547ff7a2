"""Run the port of nvFuser's multi-device Python tests (multidevice/) on the ranks of one
world and collect every test's outcome.

    python -m tests.nvfuser_port.runner --ranks 2,4 [-k EXPR] [--json out.json]

Each world is one launch (spawning ranks costs seconds): every rank runs pytest on
multidevice/ (gloo on CPUs: the tests that need CUDA, marked `gpu`, are left out; NCCL
with `--backend nccl` on GPUs), and its outcome of each test comes back. A test's outcome
over the ranks: passed (on every rank), skipped (nvFuser's own condition, such as a world
size it does not divide), or failed, classified by the first error: `refused` (a located
FusionDefinitionError, HostIRError or InputError naming what is unsupported), `wrong`
(torch.testing found values that differ), `differs` (another assertion failed: what
nvFuser asserts about its own kernels, such as how many a profiler counts) or `crash`
(anything else).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
from dataclasses import asdict, dataclass
from pathlib import Path

import pytest
import torch

from hostir import runtime

PORT = Path(__file__).resolve().parent / "multidevice"
REFUSALS = ("FusionDefinitionError", "HostIRError", "InputError")
TESTING = str(Path(torch.testing.__file__).resolve().parent)
"""An assertion raised in torch.testing compared values."""


@dataclass
class Outcome:
    outcome: str
    """passed, skipped, refused, wrong, differs or crash."""
    error: str = ""
    """The exception's type and first line (the skip reason of a skipped test)."""


class _Recorder:
    """A pytest plugin keeping each test's outcome on this rank."""

    def __init__(self) -> None:
        self.outcomes: dict[str, Outcome] = {}

    @pytest.hookimpl(hookwrapper=True)
    def pytest_runtest_makereport(self, item, call):
        report = (yield).get_result()
        name = item.nodeid.split("multidevice/", 1)[-1]
        if report.skipped:
            reason = report.longrepr[2] if isinstance(report.longrepr, tuple) else str(report.longrepr)
            self.outcomes.setdefault(name, Outcome("skipped", reason))
        elif report.failed and name not in self.outcomes:
            self.outcomes[name] = _failure(call.excinfo)
        elif report.when == "call" and report.passed:
            self.outcomes.setdefault(name, Outcome("passed"))


def _failure(excinfo) -> Outcome:
    kind = excinfo.type.__name__
    message = str(excinfo.value).strip().splitlines()[0] if str(excinfo.value).strip() else ""
    if kind in REFUSALS:
        return Outcome("refused", f"{kind}: {message}")
    if kind == "AssertionError":
        values = any(str(entry.path).startswith(TESTING) for entry in excinfo.traceback)
        return Outcome("wrong" if values else "differs", f"{kind}: {message}"[:500])
    return Outcome("crash", f"{kind}: {message}"[:500])


def _run_on_rank(rank: int, world_size: int, selection: str | None, markers: str) -> dict[str, Outcome]:
    os.environ["HOSTIR_NVFUSER_PORT"] = "1"
    recorder = _Recorder()
    # `benchmark` is nvFuser's fixture, the port's own (conftest): pytest-benchmark, where
    # installed, would claim it.
    arguments = [str(PORT), "-q", "-p", "no:cacheprovider", "-p", "no:benchmark", "-m", markers, "-o", "addopts=",
                 "--no-header"]
    if selection:
        arguments += ["-k", selection]
    log_dir = os.environ.get("HOSTIR_PORT_LOG_DIR")
    with open(Path(log_dir) / f"rank{rank}.log", "w") if log_dir else tempfile.TemporaryFile("w+") as report:
        stdout, sys.stdout = sys.stdout, report
        try:
            code = pytest.main(arguments, plugins=[recorder])
        finally:
            sys.stdout = stdout
    if code not in (pytest.ExitCode.OK, pytest.ExitCode.TESTS_FAILED, pytest.ExitCode.NO_TESTS_COLLECTED):
        raise RuntimeError(f"pytest on rank {rank} ended with {code!r} (a collection error or a bug of the runner; "
                           "--log-dir keeps each rank's pytest report)")
    return recorder.outcomes


def merge(per_rank: list[dict[str, Outcome]]) -> dict[str, Outcome]:
    """A test's outcome over the ranks: the first failure, else skipped or passed alike."""
    merged: dict[str, Outcome] = {}
    for name in per_rank[0]:
        outcomes = [rank.get(name, Outcome("crash", "no outcome on this rank")) for rank in per_rank]
        failures = [o for o in outcomes if o.outcome not in ("passed", "skipped")]
        timeouts = [o for o in failures if "timed out" in o.error.lower() or "connection closed" in o.error.lower()]
        merged[name] = next((o for o in failures if o not in timeouts), failures[0] if failures else outcomes[0])
    return merged


def run_port(world_size: int, backend: str | None = None, selection: str | None = None, timeout: float = 1200) -> dict[str, Outcome]:
    """Every ported test's outcome on a world of `world_size` ranks."""
    backend = backend or runtime.launcher.default_backend(world_size)
    markers = "not benchmark and not cpu_twin" if backend == "nccl" else "not benchmark and not gpu"
    per_rank = runtime.launch(_run_on_rank, world_size, (selection, markers), backend=backend, timeout=timeout,
                              collective_timeout=60)
    return merge(per_rank)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--ranks", default="2,4")
    parser.add_argument("--backend", choices=("gloo", "nccl"))
    parser.add_argument("-k", dest="selection")
    parser.add_argument("--json")
    parser.add_argument("--log-dir", help="keep each rank's pytest report there (rankN.log)")
    args = parser.parse_args(argv)
    if args.log_dir:
        Path(args.log_dir).mkdir(parents=True, exist_ok=True)
        os.environ["HOSTIR_PORT_LOG_DIR"] = str(Path(args.log_dir).resolve())  # the ranks inherit it
    report = {}
    for world_size in map(int, args.ranks.split(",")):
        outcomes = run_port(world_size, args.backend, args.selection)
        report[world_size] = {name: asdict(o) for name, o in outcomes.items()}
        for name, o in sorted(outcomes.items()):
            print(f"{world_size} ranks  {o.outcome:8} {name}  {o.error[:160]}")
    if args.json:
        Path(args.json).write_text(json.dumps(report, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
