"""The GPU benchmarks' --tiny modes on 2 CPU ranks (gloo), so that they cannot rot where no
GPU runs them: every variant must build, pass its reference check and be timed. One launch
runs the benchmarks (starting ranks costs more than the toy runs)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
import torch

from hostir.runtime import launch
from hostir.runtime.graphs import EAGER_ON_CPU

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))
import gpu_host_overhead  # noqa: E402
import overlap  # noqa: E402
import transformer_block  # noqa: E402

NOT_RUN_HERE = {overlap.NEEDS_CUDA, overlap.NO_FUSED_OP, overlap.NEEDS_TWO_GPUS}


def families_run(case: dict) -> set[str]:
    """Every family of swept variants; the hand-written copy-engine schedule only for
    matmul+AR on 2 GPUs."""
    copy_engine_schedule = case["op"] == "matmul+AR" and torch.cuda.device_count() >= 2
    return set(overlap.families()) - (set() if copy_engine_schedule else {"handwritten_ce"})


def all_tiny(rank: int, world_size: int) -> tuple[dict, dict, dict]:
    # overlap.py in two rounds (every variant built first), the layer benchmark in its default three
    return (overlap.main(["--tiny", "--rounds", "2"]), gpu_host_overhead.main(["--tiny"]),
            transformer_block.main(["--tiny"]))


@pytest.fixture(scope="module")
def reports() -> tuple[dict, dict, dict]:
    return launch(all_tiny, 2, timeout=240)[0]


def test_overlap_checks_and_times_every_variant(reports):
    report, _, _ = reports
    assert report["rounds"] == 2
    assert [case["op"] for case in report["cases"]] == list(overlap.CASES)
    for case in report["cases"]:
        assert case["ideal_nccl_ms"] > 0 and case["ideal_ce_ms"] > 0
        for name, result in case["variants"].items():
            where = f"{case['op']} {name}"
            if result["status"] in NOT_RUN_HERE:
                continue
            assert result["status"] == "ok", f"{where}: {result}"
            fastest, slowest = result["ms_fastest_slowest"]
            assert 0 < fastest <= result["ms"] <= slowest, where
            assert result["ms_back_to_back"] > 0, where
        assert set(case["best"]) == families_run(case)


def test_overlap_judges_every_variant_against_both_ideals_the_hideable_time_and_the_gemm_alone(reports):
    report, _, _ = reports
    gbps = report["cost_model"]["copy_engine_gbps"]
    for case in report["cases"]:
        m, k, n = case["shape"]
        variants = case["variants"]
        matmul, nccl = variants["matmul"]["ms"], variants["comm_nccl"]["ms"]
        communication = min(variants[name]["ms"] for name in overlap.COMMUNICATION if "ms" in variants[name])
        assert case["ideal_nccl_ms"] == max(nccl, matmul)
        assert case["ideal_nccl_back_to_back_ms"] == max(variants[name]["ms_back_to_back"] for name in ("comm_nccl", "matmul"))
        # Each rank sends its share on the copy engines: the A shard (all-gather), half the
        # partial product (reduce-scatter on 2 ranks), or half of it twice (all-reduce).
        sent = {"AG+matmul": m // 2 * k, "matmul+RS": m * n // 2, "matmul+AR": m * n}[case["op"]] * 2  # bf16
        assert case["copy_engine_bytes_ms"] == pytest.approx(sent / (gbps * 1e6))
        assert case["ideal_ce_ms"] == max(case["copy_engine_bytes_ms"], matmul)
        flops = 2 * m * n * (k if case["op"] == "AG+matmul" else k // 2)
        assert case["matmul_tflops"] == pytest.approx(flops / matmul / 1e9)
        for name in ("naive", *(f"{label}_S{s}" for label, _, _ in overlap.HOSTIR_VARIANTS for s in overlap.CHUNK_COUNTS)):
            result = variants[name]
            assert result["ratio"] == pytest.approx(result["ms"] / case["ideal_nccl_ms"]), name
            assert result["ratio_ce"] == pytest.approx(result["ms"] / case["ideal_ce_ms"]), name
            hidden = (communication + matmul - result["ms"]) / min(communication, matmul)
            assert result["hidden"] == pytest.approx(hidden), name
            assert result["tflops"] == pytest.approx(flops / result["ms"] / 1e9), name
            assert result["ratio_back_to_back"] == pytest.approx(
                result["ms_back_to_back"] / case["ideal_nccl_back_to_back_ms"]), name
        for family, best in case["best"].items():
            assert best["ms"] == min(variants[f"{family}_S{s}"]["ms"] for s in overlap.CHUNK_COUNTS)


def test_overlap_summarizes_each_family_at_its_best_chunk_count(reports):
    report, _, _ = reports
    lines = overlap.summary(report).splitlines()
    for case in report["cases"]:
        label = f"{case['op']} {'x'.join(map(str, case['shape']))}"
        listed = {line.split()[2] for line in lines if line.startswith(label)}
        assert listed == {"naive", *families_run(case)}, label


def test_overlap_says_why_the_hand_written_copy_engine_schedule_does_not_run(reports):
    report, _, _ = reports
    for case in report["cases"]:
        statuses = {case["variants"][f"handwritten_ce_S{s}"]["status"] for s in overlap.CHUNK_COUNTS}
        if case["op"] != "matmul+AR":
            assert statuses == {overlap.NO_FUSED_OP}
        elif torch.cuda.device_count() < 2:
            assert statuses == {overlap.NEEDS_TWO_GPUS}


def test_overlap_runs_every_hostir_variant_at_every_chunk_count(reports):
    report, _, _ = reports
    expected = {f"{label}_S{s}" for label, _, _ in overlap.HOSTIR_VARIANTS for s in overlap.CHUNK_COUNTS}
    for case in report["cases"]:
        assert expected <= {name for name, r in case["variants"].items() if r["status"] == "ok"}


def test_gpu_host_overhead_checks_both_schedules_and_times_every_op_kind(reports):
    _, report, _ = reports
    for row in report["pipelines"]:
        for name in gpu_host_overhead.VARIANTS:
            assert row[name]["status"] == "ok", f"{row['op']} {name}: {row[name]}"
            assert row[name]["timing"]["wall_ms"] > 0
    assert [row["kind"] for row in report["host_ops"]] == list(gpu_host_overhead.host_op_kinds(2))
    assert [row["ops"] for row in report["graph_replay"]] == list(gpu_host_overhead.TINY_GRAPH_OP_COUNTS)
    for row in report["graph_replay"]:
        assert row["graph_mode"] == EAGER_ON_CPU and row["eager"]["host_ms"] > 0 and row["graph"]["host_ms"] > 0


def gpu_host_overhead_tiny(rank: int, world_size: int) -> dict:
    return gpu_host_overhead.main(["--tiny"])


def test_gpu_host_overhead_on_one_rank_pipelines_a_matmul_and_skips_the_collective():
    (report,) = launch(gpu_host_overhead_tiny, 1, timeout=120)
    (row,) = report["pipelines"]
    assert row["op"] == "matmul"
    for name in gpu_host_overhead.VARIANTS:
        assert row[name]["status"] == "ok", f"{name}: {row[name]}"
    assert [r["kind"] for r in report["host_ops"]] == [k for k in gpu_host_overhead.host_op_kinds(1)
                                                       if not k.startswith("collective")]


def test_the_layer_benchmark_checks_and_times_torch_and_hostir_with_its_defaults(reports):
    _, _, report = reports
    assert report["rounds"] == transformer_block.ROUNDS == 3
    assert [(layer["block"], layer["shape"]) for layer in report["layers"]] == [
        ("mlp", list(transformer_block.parse_shape(transformer_block.TINY_SHAPES[0]))),
        ("attention", list(transformer_block.parse_shape(transformer_block.TINY_SHAPES[0])))]
    for layer in report["layers"]:
        results = layer["results"]
        # CPU ranks: torch's fused ops and torch.compile's variants need CUDA
        assert {"gemms", "eager", "hostir_S1", "hostir_S2", "hostir_S4", "hostir_S8"} <= set(results)
        for name, result in results.items():
            assert result["status"] == "ok", f"{layer['block']} {name}: {result}"
            timing = result["timing"]
            assert 0 < timing["device_fastest_ms"] <= timing["device_ms"] <= timing["device_slowest_ms"], name
            assert timing["back_to_back_ms"] > 0, name


@pytest.mark.parametrize("main", [overlap.main, transformer_block.main], ids=["overlap", "transformer_block"])
def test_fewer_than_one_round_is_refused_before_anything_runs(main, capsys):
    with pytest.raises(SystemExit):
        main(["--tiny", "--rounds", "0"])
    assert "--rounds must be at least 1, got 0" in capsys.readouterr().err
