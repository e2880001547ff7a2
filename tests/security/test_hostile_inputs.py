"""Hostile inputs (docs/security.md): a tiny file or option that asks for unbounded
memory, time, ranks or streams, or that broke the tools, is refused in one line (exit 1)
or run correctly, within its LIMITS: every case runs as a subprocess that the kernel stops
past 10 s of CPU time (RLIMIT_CPU; SIGXCPU) and refuses more than 1 GB of address space
(RLIMIT_AS; MemoryError), each spawned rank likewise. The cases are in the bad-input
corpus's format (tests/bad_inputs/README.md); `python -m tests.bad_inputs.run_corpus
--corpus tests/security/hostile` runs them alone."""

from __future__ import annotations

import functools
import subprocess
import sys
from pathlib import Path

import pytest
from bad_inputs.run_corpus import OUTCOMES, Case, _limit, _over_limit, all_cases, run_all

HOSTILE = Path(__file__).resolve().parent / "hostile"
CASES = all_cases(corpus=HOSTILE)
LIMITS = (10.0, 1 << 30)


@pytest.fixture(scope="module")
def results(request) -> dict:
    """The results of the selected cases (`-k` selects), all run at once."""
    selected = [item.callspec.params["case"] for item in request.session.items
                if getattr(item, "module", None) is request.module and hasattr(item, "callspec")
                and "case" in item.callspec.params]
    return {r.case.path: r for r in run_all(selected, jobs=2)}


@pytest.mark.parametrize("case", CASES, ids=[c.path.removeprefix("tests/security/hostile/") for c in CASES])
def test_a_hostile_input_is_refused_within_its_limits(case, results) -> None:
    assert case.limits is not None and case.limits <= LIMITS, f"{case.path} runs without LIMITS of at most 10 s, 1 GB"
    result = results[case.path]
    assert result.outcome == "ok", f"{result.outcome} ({OUTCOMES[result.outcome]}): {result.detail}"


@pytest.mark.parametrize("code, failure", [
    ("while True: pass", "over 1 s of CPU time"),
    ("bytearray(2 << 30)", "over 1024 MiB of memory: MemoryError"),
])
def test_the_kernel_holds_a_case_to_its_limits(code, failure) -> None:
    # What the cases' limits rely on: a command past them is stopped, and said to be.
    case = Case("limits", limits=(1.0, 1 << 30))
    process = subprocess.run([sys.executable, "-c", code], preexec_fn=functools.partial(_limit, *case.limits),
                             capture_output=True, text=True, timeout=60)
    assert _over_limit(case, {"exit": process.returncode}, process.stderr).startswith(failure)
