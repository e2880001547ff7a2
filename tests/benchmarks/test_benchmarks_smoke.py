"""The GPU benchmarks' --tiny modes on 2 CPU ranks (gloo), so that they cannot rot where no
GPU runs them: every variant must build, pass its reference check and be timed. One launch
runs the benchmarks (starting ranks costs more than the toy runs)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from hostir.runtime import launch
from hostir.runtime.graphs import EAGER_ON_CPU

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))
import gpu_host_overhead  # noqa: E402
import overlap  # noqa: E402
import transformer_block  # noqa: E402

NOT_RUN_HERE = {overlap.NEEDS_CUDA, overlap.NO_FUSED_OP}


def all_tiny(rank: int, world_size: int) -> tuple[dict, dict, dict]:
    return overlap.main(["--tiny"]), gpu_host_overhead.main(["--tiny"]), transformer_block.main(["--tiny"])


@pytest.fixture(scope="module")
def reports() -> tuple[dict, dict, dict]:
    return launch(all_tiny, 2, timeout=240)[0]


def test_overlap_checks_and_times_every_variant(reports):
    report, _, _ = reports
    assert [case["op"] for case in report["cases"]] == list(overlap.CASES)
    for case in report["cases"]:
        assert case["ideal_ms"] > 0
        for name, result in case["variants"].items():
            where = f"{case['op']} {name}"
            if result["status"] in NOT_RUN_HERE:
                continue
            assert result["status"] == "ok", f"{where}: {result}"
            assert result["ms"] > 0, where
        assert set(case["best"]) == set(overlap.families())


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
    assert [(layer["block"], layer["shape"]) for layer in report["layers"]] == [
        ("mlp", list(transformer_block.parse_shape(transformer_block.TINY_SHAPES[0]))),
        ("attention", list(transformer_block.parse_shape(transformer_block.TINY_SHAPES[0])))]
    for layer in report["layers"]:
        results = layer["results"]
        # CPU ranks: torch's fused ops and torch.compile's variants need CUDA
        assert {"gemms", "eager", "hostir_S1", "hostir_S2", "hostir_S4", "hostir_S8"} <= set(results)
        for name, result in results.items():
            assert result["status"] == "ok", f"{layer['block']} {name}: {result}"
            assert result["timing"]["device_ms"] > 0
