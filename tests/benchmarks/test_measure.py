"""benchmarks/measure.py's checked timings on one CPU rank (gloo): which variants are timed,
and in what order their runs happen, one variant at a time or in rounds."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
import torch

from hostir.runtime import launch

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))
from measure import Variant, checked_timings  # noqa: E402

REPEAT, WARMUP = 4, 1


def _recorded(name: str, calls: list, off_by: float = 0.0):
    """A variant that records its build and each run in `calls` (off by `off_by` from what
    it is checked against)."""
    def build() -> Variant:
        calls.append(("build", name))
        out = torch.zeros(4)

        def run() -> None:
            calls.append(("run", name))
            out.copy_(torch.arange(4.0) + off_by)

        return Variant(run, lambda: out, lambda ops: None, lambda ops: torch.arange(4.0))

    return build


def _broken() -> Variant:
    raise RuntimeError("no kernel for this")


def timed_variants(rank: int, world_size: int, rounds: int) -> tuple[dict, list]:
    calls: list = []
    builds = {"a": _recorded("a", calls), "wrong": _recorded("wrong", calls, off_by=1.0), "b": _recorded("b", calls),
              "broken": _broken}
    results = checked_timings(builds, lambda: None, torch.device("cpu"), torch.float32, REPEAT, WARMUP, rounds)
    return {name: {k: v for k, v in r.items() if k != "timing"} | {"timed": "timing" in r}
            for name, r in results.items()}, calls


@pytest.fixture(scope="module")
def one_at_a_time_and_in_rounds() -> list[tuple[dict, list]]:
    return [launch(timed_variants, 1, (rounds,))[0] for rounds in (1, 2)]


@pytest.mark.parametrize("mode", [0, 1], ids=["rounds=1", "rounds=2"])
def test_only_right_variants_are_timed_and_failures_say_why(one_at_a_time_and_in_rounds, mode):
    results, _ = one_at_a_time_and_in_rounds[mode]
    assert results["a"] == {"status": "ok", "error": 0.0, "timed": True}
    assert results["b"]["timed"] and results["b"]["status"] == "ok"
    assert results["wrong"]["status"].startswith("WRONG") and not results["wrong"]["timed"]
    assert results["broken"] == {"status": "ERROR", "message": "RuntimeError: no kernel for this", "timed": False}


def test_one_round_builds_checks_and_times_each_variant_before_the_next_is_built(one_at_a_time_and_in_rounds):
    _, calls = one_at_a_time_and_in_rounds[0]
    timed = [("run", "a")] * (1 + WARMUP + REPEAT + REPEAT)  # the check, warm-up, settled, back to back
    assert calls == [("build", "a"), *timed, ("build", "wrong"), ("run", "wrong"), ("build", "b"),
                     *[("run", "b")] * len(timed)]


def test_rounds_build_and_check_every_variant_first_then_time_their_settled_runs_in_turn(
        one_at_a_time_and_in_rounds):
    _, calls = one_at_a_time_and_in_rounds[1]
    checks = [("build", "a"), ("run", "a"), ("build", "wrong"), ("run", "wrong"), ("build", "b"), ("run", "b")]
    warmups = [("run", "a")] * WARMUP + [("run", "b")] * WARMUP
    settled_in_turn = [("run", "a"), ("run", "b")] * (REPEAT // 2)
    one_round = [*settled_in_turn, *[("run", "a")] * REPEAT, *[("run", "b")] * REPEAT]
    assert calls == [*checks, *warmups, *one_round, *one_round]
