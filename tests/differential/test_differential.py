"""Differential testing against eager torch (harness.py), and a guard on the generator.

The differential test runs the fixed-seed CI profile (300 programs over 1, 2 and 4 ranks,
each with every lowering option of CPU ranks, each 30th also with each pass disabled in
turn); HOSTIR_DIFFERENTIAL=long runs 3,000 (README). Every defect it ever found is a named reproducer in regressions.py, run here.
"""

from __future__ import annotations

import ast
import os
import re
import time

import pytest

from hostir import runtime
from hostir_dialect import FusionDefinitionError
from hostir_dialect.frontend import Ops

from . import harness
from .generator import ARITHMETIC, COMPARISONS, GUARDED_UNARY, REDUCTIONS, SAFE_UNARY, build, program_from_source
from .regressions import REGRESSIONS

OTHER_OPS = ("matmul", "linear", "broadcast", "permute", "reshape", "squeeze", "slice", "select", "cast", "set")
PARITY_OPS = {"cat": ("cat",), "expand": ("broadcast_in_dim",), "where": ("where",), "triu": ("triu",),
              "uniform": ("uniform",), "iota": ("iota",), "var_mean": ("var_mean",), "grouped_mm": ("grouped_mm",),
              "attention": ("sdpfa_fwd",), "attention backward": ("sdpfa_bwd",)}
"""The ops of nvFuser's multi-device tests (issue 28), by kind."""

PROFILES = {"long": (3000, 1, 5)}  # HOSTIR_DIFFERENTIAL value -> (programs, seed, disable every)
CI_PROFILE = (300, 0, 30)
"""Every 30th program also with each pass disabled: the CI time (the long profile does every 5th)."""
PROFILE = os.environ.get("HOSTIR_DIFFERENTIAL")


def test_lowered_programs_never_give_a_wrong_answer_crash_or_hang():
    """Each program with every lowering option of CPU ranks: the defaults (`auto`) put
    collectives on the copy engines wherever the model says they are faster, which is
    where split-by-member rewrites the compute (a crash it caused on 4 ranks showed only
    with them: regression C5)."""
    count, seed, disable_every = PROFILES.get(PROFILE, CI_PROFILE)
    results = harness.run_profile(count, seed, disable_every=disable_every, lowerings=harness.CPU_LOWERINGS)
    bad = [r for r in results if r.outcome in ("wrong", "crash", "hang")]
    if bad:
        pytest.fail(f"{len(bad)} of {len(results)} runs gave a wrong answer, crashed or hung; reproduce one with "
                    f"`python -m tests.differential.harness --replay FILE`\n{harness.summary(results)}", pytrace=False)


PIPELINE_SLICE = (10, 7)
"""Tensor-parallel pipelines (generator.pipelines) and the seed of CI's slice of them."""


def _failures(results: list) -> list:
    return [r for r in results if r.outcome in ("wrong", "crash", "hang")]


def test_pipelines_are_right_with_every_lowering_option_on_cpu_ranks():
    """Stream-pipelined matmuls feeding kernel units, with collectives at both ends, lowered
    with every transport, with and without bounded intermediates, S in 1-8 chunks; the
    stream hazard check fails any work that only CPU program order keeps right."""
    count, seed = PIPELINE_SLICE
    results = harness.run_profile(0, seed, (1, 2), 0, lowerings=harness.CPU_LOWERINGS, pipeline_count=count)
    assert len(results) == count * len(harness.CPU_LOWERINGS)
    assert not _failures(results), harness.summary(results)
    assert sum(r.outcome == "correct" for r in results) >= 0.9 * len(results), harness.summary(results)
    chunked = {name for r in results if r.outcome == "correct" for name in r.host_ops}
    assert {"hir.alias_select", "hir.alias_chunk"} <= chunked, "the slice must pipeline both spellings of Stream"


def test_pipelines_are_right_on_an_odd_team_of_three_cpu_ranks():
    """Three members: the copy engines' pushes (to member me - s at step s) and arrivals
    (from me + s) differ at every step, where on two and four ranks some steps coincide; an
    all-reduce's lead (whose push the own GEMM adds onto in place) must be the first
    arrival (a lead of me - 1 fails here)."""
    results = harness.run_profile(0, 3, (3,), 0, lowerings=harness.CPU_LOWERINGS, pipeline_count=4)
    assert not _failures(results), harness.summary(results)
    assert sum(r.outcome == "correct" for r in results) >= 0.9 * len(results), harness.summary(results)
    on_copy_engines = {name for r in results if r.outcome == "correct" and r.lowering.startswith("copy-engine")
                       for name in r.host_ops}
    assert {"hir.allgather", "hir.allreduce"} <= on_copy_engines, harness.summary(results)


def test_programs_are_right_on_worlds_of_five_six_and_eight_cpu_ranks():
    """Worlds beyond the CI profile's: a prime one, 2x3 and 2x4 meshes, a 2x2x2 one, meshes
    in reverse device order; each world size communicates in at least one right program."""
    results = harness.run_profile(30, 12, (5, 6, 8), 0)
    assert not _failures(results), harness.summary(results)
    assert sum(r.outcome == "correct" for r in results) >= 0.6 * len(results), harness.summary(results)
    assert {r.world_size for r in results if r.outcome == "correct" and r.communicated} == {5, 6, 8}, \
        harness.summary(results)


def test_pipelines_with_compiled_units_are_right_on_cpu_ranks():
    """The compiled-unit backend (torch.compile, Inductor's C++ kernels on CPUs) computes
    what eager torch computes, hoisted weight layouts and loop-local buffers included."""
    results = harness.run_profile(0, 4, (1, 2), 0, lowerings=harness.COMPILED_UNIT_LOWERINGS, pipeline_count=5)
    assert not _failures(results), harness.summary(results)
    assert all(r.outcome == "correct" for r in results), harness.summary(results)
    assert sum("hir.post_on_stream" in r.host_ops for r in results) >= 3, "the slice must run kernel units"


@pytest.mark.gpu
@pytest.mark.parametrize("gpus", [2, 4])
def test_pipelines_are_right_with_every_lowering_option_on_gpus(gpus):
    """A fixed-seed slice of the GPU differential profile (README): NCCL, copy engines and
    auto, bounded intermediates, CUDA-graph replay, in f32 and bf16; on four GPUs the copy
    engines push to three peers in ring order. The seed draws two row-parallel blocks whose
    all-reduce loops order-chunk-compute skews, on two GPUs and on four."""
    import torch

    if torch.cuda.device_count() < gpus:
        pytest.skip(f"needs {gpus} CUDA GPUs")
    results = harness.run_profile(0, 15, (gpus,), 0, lowerings=harness.GPU_LOWERINGS, pipeline_count=8, device="cuda")
    assert not _failures(results), harness.summary(results)
    assert sum(r.outcome == "correct" for r in results) >= 0.9 * len(results), harness.summary(results)


def test_every_defect_found_stays_fixed():
    """Each reproducer gives its fixed outcome (a refusal reached by every rank counts as
    refused; a rank left waiting would be a hang)."""
    cases = [harness.Case(program_from_source(r.source, r.world_size), i, r.disabled, harness.Lowering.parse(r.lowering))
             for i, r in enumerate(REGRESSIONS.values())]
    got = {name: result for name, result in zip(REGRESSIONS, harness.run_cases(cases, 0))}
    changed = {name: f"{got[name].outcome}: {got[name].message[:300]}"
               for name, r in REGRESSIONS.items() if got[name].outcome != r.outcome}
    assert not changed, changed


def test_no_launch_starts_after_the_time_limit_and_its_programs_are_reported_not_run(monkeypatch):
    """A GPU profile under a device's time limit reports what ran instead of nothing: the
    launches after the deadline start not, and their programs count apart."""
    sources = [r.source for r in REGRESSIONS.values() if r.world_size == 2 and r.disabled is None][:3]
    cases = [harness.Case(program_from_source(s, 2), i, None, harness.Lowering.parse("nccl")) for i, s in enumerate(sources)]
    monkeypatch.setattr(harness, "MAX_JOBS_PER_LAUNCH", 2)
    launched: list[int] = []
    clock = iter([0.0, 5.0])  # the first launch starts before the deadline, the second after

    def fake_batch(jobs, world_size, **options):
        launched.append(len(jobs))
        return [[runtime.RankResult([index], [], None) for _ in range(world_size)] for index in range(len(jobs))]

    monkeypatch.setattr(harness.runtime, "run_spmd_batch", fake_batch)
    monkeypatch.setattr(harness.time, "monotonic", lambda: next(clock, 5.0))
    for case in cases:
        assert harness.prepare(case, 0) is None
    done = harness.run_launches(cases, 2, deadline=1.0)
    assert launched == [2]
    assert [isinstance(done[id(c)], list) for c in cases] == [True, True, False]
    assert done[id(cases[2])].outcome == harness.NOT_RUN
    results = [c.result("correct") for c in cases[:2]] + [done[id(cases[2])]]
    header, by_world = harness.summary(results).splitlines()[1:3]
    assert header.endswith("invalid  not run")
    assert by_world.split() == ["2", "2", "2", "0", "0", "0", "0", "0", "1"]  # 2 programs, 2 correct, 1 not run


def test_a_lowering_that_does_not_end_is_a_crash_of_its_program(monkeypatch):
    """A pass that loops is reported for its program, and the profile goes on."""
    monkeypatch.setattr(harness, "LOWERING_SECONDS", 1)
    monkeypatch.setattr(harness, "lower_fusion", lambda *_: time.sleep(30))
    program = program_from_source(REGRESSIONS["a_view_of_an_input_writes_nothing_in_a_stream_loop"].source, 1)
    started = time.monotonic()
    (result,) = harness.run_cases([harness.Case(program, 0, None)], 0)
    assert (result.outcome, result.phase) == ("crash", "lower")
    assert "lowering ran past 1 s" in result.message
    assert time.monotonic() - started < 20


def test_launches_are_shorter_under_a_time_limit(monkeypatch):
    """With a deadline a launch takes at most TIMED_JOBS_PER_LAUNCH jobs, so the last launch
    ends soon after the limit; without one, up to MAX_JOBS_PER_LAUNCH."""
    sources = [r.source for r in REGRESSIONS.values() if r.world_size == 2 and r.disabled is None][:3]
    cases = [harness.Case(program_from_source(s, 2), i, None, harness.Lowering.parse("nccl")) for i, s in enumerate(sources)]
    monkeypatch.setattr(harness, "TIMED_JOBS_PER_LAUNCH", 1)
    launched: list[int] = []

    def fake_batch(jobs, world_size, **options):
        launched.append(len(jobs))
        return [[runtime.RankResult([index], [], None) for _ in range(world_size)] for index in range(len(jobs))]

    monkeypatch.setattr(harness.runtime, "run_spmd_batch", fake_batch)
    for case in cases:
        assert harness.prepare(case, 0) is None
    harness.run_launches(cases, 2, deadline=harness.time.monotonic() + 3600)
    assert launched == [1, 1, 1]
    launched.clear()
    harness.run_launches(cases, 2)
    assert launched == [3]


def test_after_a_crash_only_the_jobs_after_the_culprit_run_again(monkeypatch):
    # Three programs in one launch; the second crashes. The launcher hands back what every
    # rank finished before (the first), so the relaunch holds the third alone.
    sources = [r.source for r in REGRESSIONS.values() if r.world_size == 2 and r.disabled is None][:3]
    cases = [harness.Case(program_from_source(s, 2), i, None, harness.Lowering.parse("nccl")) for i, s in enumerate(sources)]
    assert all(harness.prepare(case, 0) is None for case in cases)  # lowered: each has its text
    launched: list[int] = []

    def fake_batch(jobs, world_size, **options):
        launched.append(len(jobs))
        texts = [job.program.strip() for job in jobs]
        finished = [[runtime.RankResult([index], [], None) for _ in range(world_size)] for index in range(len(jobs))]
        if cases[1].text.strip() in texts:
            k = texts.index(cases[1].text.strip())
            line = jobs[k].program.count("\n", 0, len(jobs[k].program) - len(jobs[k].program.lstrip("\n"))) + 1
            raise runtime.SpmdError(f"rank 0 failed: ExecutionError: <job>:{line}:1: error: boom", completed=finished[:k])
        return finished

    monkeypatch.setattr(harness.runtime, "run_spmd_batch", fake_batch)
    done = harness._run_until_clean(list(cases), 2)
    assert launched == [3, 1]
    assert done[id(cases[0])] == [[0], [0]] and done[id(cases[2])] == [[0], [0]]
    assert done[id(cases[1])].outcome == "crash" and "boom" in done[id(cases[1])].message


def test_the_generator_draws_mostly_valid_definitions_covering_every_op():
    """Guards the generator against rot: if the frontend changes, most draws must still
    build (a FusionDefinitionError counts against it) and every kind of op and schedule
    must still appear."""
    drawn = harness.draw_programs(360, 7, (1, 2, 4))  # the parity ops and whole dynamic shapes share the draws
    built = 0
    for program in drawn:
        assert not program.frontend_errors, program.frontend_errors
        try:
            build(program)[0].to_module()
            built += 1
        except FusionDefinitionError:
            pass
    assert len(drawn) >= 200 and built >= 0.9 * len(drawn), f"{built} of {len(drawn)} draws build"
    sources = "\n".join(p.source() for p in drawn)
    used = set(re.findall(r"fd\.ops\.(\w+)\(", sources))
    assert used <= {name for name in dir(Ops) if not name.startswith("_")}
    kinds = {"unary": SAFE_UNARY + GUARDED_UNARY, "arithmetic": ARITHMETIC, "comparison": COMPARISONS,
             "reduction": REDUCTIONS, **{name: (name,) for name in OTHER_OPS}, **PARITY_OPS}
    missing = [kind for kind, names in kinds.items() if not used & set(names)]
    assert not missing, f"no draw used an op of kind {', '.join(missing)}"
    for feature in ("DIDx", "DIDy", "Stream", "outer_split", "set_allocation_order", "[-1", "DeviceMesh([0, 1])",
                    "DeviceMesh([[0, 1], [2, 3]])"):
        assert feature in sources, feature
    whole_shapes_dynamic = sum(_declares_whole_shapes_dynamic(p.source()) for p in drawn)
    assert whole_shapes_dynamic >= 0.1 * len(drawn), f"{whole_shapes_dynamic} of {len(drawn)} draws"


def _declares_whole_shapes_dynamic(source: str) -> bool:
    """Every input extent -1 but broadcast ones (1), as nvFuser users declare inputs."""
    declared = [ast.literal_eval(shape) for shape in re.findall(r"define_tensor\((\[[-\d, ]*\])", source)]
    extents = [e for shape in declared for e in shape]
    return -1 in extents and set(extents) <= {-1, 1}


def test_a_profile_whose_output_nobody_reads_still_writes_its_report(tmp_path, monkeypatch):
    """`harness ... | head` once ended a GPU profile at the first progress line nobody read,
    before it wrote its report: the report now comes first, and the lines stop instead."""

    class Closed:
        def write(self, text: str) -> int:
            raise BrokenPipeError

        def flush(self) -> None:
            raise BrokenPipeError

    monkeypatch.setattr(harness.sys, "stderr", Closed())
    monkeypatch.setattr(harness.sys, "stdout", Closed())
    report = tmp_path / "report.json"
    assert harness.main(["--programs", "2", "--ranks", "1", "--disable-every", "0", "--report", str(report)]) == 0
    results = harness.load_report(str(report))
    assert len(results) == 2 and all(r.outcome in ("correct", "refused") for r in results)


@pytest.mark.parametrize(("ranks", "message"), [("7", "no meshes drawn for \\[7\\]"), ("0", "at least one rank"),
                                                ("2,x", "not comma-separated integers")])
def test_a_world_size_the_generator_cannot_draw_is_refused_in_one_line(ranks, message, capsys):
    with pytest.raises(SystemExit) as exit_:
        harness.main(["--programs", "1", "--ranks", ranks])
    assert exit_.value.code == 2
    assert re.search(message, capsys.readouterr().err)
