"""choose-pipelining's estimate: a two-stage pipeline against running whole, with the host's
time per chunk counted only where it exceeds the GPU's (lit_tests/passes/choose_pipelining.mlir
checks the decisions on IR); the remarks that report each decision (`hostir-opt --remarks`)."""

from __future__ import annotations

import json
import re
from dataclasses import replace
from pathlib import Path

import pytest

from hostir.passes import opt
from hostir.passes.choose_pipelining import Stages

# Four chunks of a function whose communication and matmuls take 1 ms each, whole.
BALANCED = Stages(chunks=4, communication=1.0, communication_per_chunk=0.25, matmuls=1.0, matmuls_per_chunk=0.25, slowdown=0.0)


def test_a_balanced_pipeline_hides_all_but_one_chunk():
    assert BALANCED.pipelined_ms(host_ms_per_chunk=0.0) == pytest.approx(1.25)
    assert BALANCED.serial_ms(host_ms_per_chunk=0.0) == pytest.approx(2.0)


def test_the_host_sets_the_pace_where_it_is_slower_than_the_gpu():
    # Eagerly at 1 ms of host time per chunk the pipeline loses; replayed from a graph it wins.
    assert BALANCED.pipelined_ms(host_ms_per_chunk=1.0) == pytest.approx(4.0)
    assert BALANCED.serial_ms(host_ms_per_chunk=1.0) == pytest.approx(2.0)


def test_the_matmuls_slowdown_beside_transfers_can_outweigh_what_overlap_hides():
    # Communication is a tenth of the matmuls: overlapping it saves 0.1 ms, but the matmuls
    # run twice as slow for the 0.1 ms the transfers run beside them.
    stages = Stages(chunks=2, communication=0.1, communication_per_chunk=0.05, matmuls=1.0, matmuls_per_chunk=0.5, slowdown=1.0)
    assert stages.pipelined_ms(0.0) == pytest.approx(1.15)
    assert stages.pipelined_ms(0.0) > stages.serial_ms(0.0)
    # A tenth slower only while they overlap: pipelining wins.
    assert replace(stages, slowdown=0.1).pipelined_ms(0.0) == pytest.approx(1.06)
    assert replace(stages, slowdown=0.1).pipelined_ms(0.0) < stages.serial_ms(0.0)


def test_transfers_longer_than_the_matmuls_are_what_the_matmuls_share_extends():
    # NCCL's kernels beside the matmuls wait for their SMs: with none of the 0.2 ms of
    # matmuls overlapping the 1 ms of transfers, the pipeline (1.0 + 0.2 + the last
    # chunk's 0.1) is slower than running whole (1.2).
    stages = Stages(chunks=2, communication=1.0, communication_per_chunk=0.5, matmuls=0.2, matmuls_per_chunk=0.1, slowdown=1.0)
    assert stages.pipelined_ms(0.0) == pytest.approx(1.3)
    assert stages.pipelined_ms(0.0) > stages.serial_ms(0.0)
    assert replace(stages, slowdown=0.0).pipelined_ms(0.0) == pytest.approx(1.1)


def test_each_phase_of_each_chunk_costs_its_signal_and_wait():
    # One phase per chunk, 0.2 ms each: four chunks lose what overlap hid (1.25 + 0.8 > 2).
    one_phase = replace(BALANCED, phases_per_chunk=1, phases_whole=1)
    assert one_phase.pipelined_ms(0.0, gpu_ms_per_phase=0.2) == pytest.approx(2.05)
    # Running whole pays the phase once.
    assert one_phase.serial_ms(0.0, gpu_ms_per_phase=0.2) == pytest.approx(2.2)
    assert one_phase.pipelined_ms(0.0, gpu_ms_per_phase=0.2) < one_phase.serial_ms(0.0, gpu_ms_per_phase=0.2)
    assert replace(one_phase, chunks=8).pipelined_ms(0.0, gpu_ms_per_phase=0.2) > one_phase.serial_ms(0.0, gpu_ms_per_phase=0.2)
    # Two chunks of an all-reduce's two phases pay four.
    two = replace(BALANCED, chunks=2, communication_per_chunk=0.5, matmuls_per_chunk=0.5, phases_per_chunk=2)
    assert two.pipelined_ms(0.0, gpu_ms_per_phase=0.2) == pytest.approx(1.5 + 0.8)


def test_what_runs_once_outside_the_loop_is_paid_once_in_either_schedule():
    outside = replace(BALANCED, communication=1.5, matmuls=1.5, outside=1.0)  # 0.5 + 0.5 of it once, whole
    assert outside.pipelined_ms(0.0) == pytest.approx(1.25 + 1.0)
    assert outside.serial_ms(0.0) == pytest.approx(3.0)


def test_a_collective_outside_the_loop_is_priced_once_whole():
    # Two all-gathers: one of a stream-parallel result (posted by each of the 4
    # iterations, a quarter of its bytes each), one of a whole result (once, outside).
    from hostir.passes.choose_pipelining import estimate
    from hostir.passes.cost_model import Machine, Topology
    from hostir_dialect import hir
    from hostir_dialect.context import parse_module

    A, B = "!fusion.tensor<f32[2 didx, 4], mesh=[0, 1]>", "!fusion.tensor<f32[4, 2 didx], mesh=[0, 1]>"
    G, S = "!fusion.tensor<f32[2, 4], mesh=[0, 1]>", "!fusion.tensor<f32[4 stream, 2], mesh=[0, 1]>"
    (func,) = parse_module(f"""fusion.func @f(%a: {A}, %b: {B}) -> ({G}, {S}) {{
  %g = fusion.set %a : {A} -> {G}
  %s = fusion.set %b : {B} -> {S}
  fusion.return %g, %s : {G}, {S}
}}""").ops
    machine = Machine.load("h200x2")
    stages = estimate(func, machine, Topology.of(0))
    gather = sum(machine.fastest_phases_ms(hir.AllgatherOp, 16, 2))  # 4 f32 per member
    assert stages is not None and stages.chunks == 4 and stages.phases_per_chunk == 1 and stages.phases_whole == 1
    assert stages.outside == pytest.approx(gather) and stages.communication == pytest.approx(2 * gather)
    transport = machine.fastest_transport(hir.AllgatherOp, 4, 2, posts=4)  # a chunk: one f32 per member
    assert stages.communication_per_chunk == pytest.approx(machine.collective_ms(hir.AllgatherOp, transport, 4, 2))


def test_the_own_member_part_computed_beside_a_chunks_transfers_hides_that_much_of_its_tail():
    # A one-phase collective of 0.25 ms a chunk after 0.25 ms of matmuls, a quarter of which
    # (the own part of four members) runs beside the transfers.
    assert replace(BALANCED, own_part_per_chunk=0.0625).pipelined_ms(0.0) == pytest.approx(1.25 - 0.0625)
    # It never hides more than the tail itself.
    assert replace(BALANCED, own_part_per_chunk=0.5).pipelined_ms(0.0) == pytest.approx(1.0)


@pytest.mark.parametrize(("example", "own_share"), [
    ("matmul_rs_through_bcast", 0.5),  # a one-phase reduce-scatter on the copy engines: 1/D
    ("matmul_ar", 0.0),  # the all-reduce's second phase reduces the own part: it waits for it
])
def test_the_own_part_is_credited_only_beside_a_one_phase_copy_engine_collective(example, own_share):
    from hostir.passes.choose_pipelining import estimate
    from hostir.passes.cost_model import Machine, Topology
    from hostir_dialect.context import parse_module

    module = parse_module((Path(__file__).resolve().parents[2] / "examples" / "fusions" / f"{example}.mlir").read_text())
    (func,) = (op for op in module.ops if op.name == "fusion.func")
    stages = estimate(func, Machine.load("h200x2"), Topology.of(0))
    assert stages is not None
    assert stages.own_part_per_chunk == pytest.approx(own_share * stages.matmuls_per_chunk)


def test_a_machine_measured_before_the_per_phase_gpu_cost_prices_it_at_zero(tmp_path, monkeypatch):
    from hostir.passes.cost_model import MACHINES, Machine

    data = json.loads((MACHINES / "h200x2.json").read_text())
    data.pop("gpu_us_per_phase", None)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    (tmp_path / "hostir" / "machines").mkdir(parents=True)
    (tmp_path / "hostir" / "machines" / "old.json").write_text(json.dumps(data))
    assert Machine.load("old").gpu_us_per_phase == 0.0


def test_running_whole_pays_the_reorder_copies():
    assert replace(BALANCED, reorders=0.5).serial_ms(0.0) == pytest.approx(2.5)


def test_only_the_last_phase_of_the_last_chunk_follows_the_matmuls():
    # A copy-engine all-reduce: the first of its two phases runs beside the chunk's own
    # matmul, the second beside the next chunk's.
    two_phases = replace(BALANCED, communication_per_chunk=0.2, last_phase_per_chunk=0.1)
    assert two_phases.pipelined_ms(0.0) == pytest.approx(4 * 0.25 + 0.1)
    assert replace(two_phases, last_phase_per_chunk=None).pipelined_ms(0.0) == pytest.approx(4 * 0.25 + 0.2)


def test_a_pipeline_pays_the_fixed_part_of_its_transfers_once():
    # Each chunk's transfer takes 0.25 ms, 0.2 of it a fixed start: the link is busy
    # 4 x 0.05 ms, and the starts overlap the other chunks' transfers.
    latency_bound = replace(BALANCED, matmuls=0.1, matmuls_per_chunk=0.025, latency_per_chunk=0.2)
    assert latency_bound.pipelined_ms(0.0) == pytest.approx(4 * 0.05 + 0.2 + 0.025)


# --------------------------------------------------------------------------- #
# Remarks: each decision of transport=auto, located, with its estimates
# --------------------------------------------------------------------------- #

AG_MATMUL = str(Path(__file__).resolve().parents[2] / "examples/fusions/ag_matmul.mlir")


def remarks_of(capsys, *options: str) -> list[str]:
    assert opt.main([AG_MATMUL, *options]) == 0
    return [line for line in capsys.readouterr().err.splitlines() if " remark: " in line]


def test_hostir_opt_remarks_say_why_auto_drops_the_readme_examples_pipeline(capsys):
    dropped, transport = remarks_of(capsys, "-p", "hostir-lower{transport=auto}", "--remarks")
    assert re.fullmatch(rf"{re.escape(AG_MATMUL)}:11:3: remark: choose-pipelining: pipeline dropped: "
                        r"estimated \d+\.\d{3} ms whole vs \d+\.\d{3} ms in 4 chunks", dropped), dropped
    assert re.fullmatch(rf"{re.escape(AG_MATMUL)}:12:5: remark: convert-op-to-communication: hir\.allgather on "
                        r"(nccl|copy_engine): estimated \d+\.\d{3} ms vs \d+\.\d{3} ms on (nccl|copy_engine) \(1 post\(s\)\)",
                        transport), transport


def test_remarks_are_printed_only_when_asked_and_only_for_decisions(capsys):
    assert remarks_of(capsys, "-p", "hostir-lower{transport=auto}") == []
    assert remarks_of(capsys, "-p", "hostir-lower{transport=nccl}", "--remarks") == []  # as declared: nothing decided


def test_a_kept_pipeline_and_one_the_model_cannot_estimate_are_remarks_too(capsys, tmp_path):
    # The README example at a layer's size (16384 x 8192 x 4096 bf16): worth pipelining.
    large = tmp_path / "ag_matmul_large.mlir"
    large.write_text(Path(AG_MATMUL).read_text().replace("f32[", "bf16[").replace("2, 8]", "2048, 8192]")
                     .replace("[8, 4]", "[8192, 4096]").replace("2, 4, r8]", "2048, 4096, r8192]"))
    assert opt.main([str(large), "-p", "hostir-lower{transport=auto cuda-graph=true}", "--remarks"]) == 0
    assert "remark: choose-pipelining: pipeline kept: estimated " in capsys.readouterr().err
    (unknown,) = remarks_of(capsys, "-p", "choose-pipelining{transport=auto}", "--remarks")  # shardings not propagated
    assert unknown.endswith("remark: choose-pipelining: pipeline of 4 chunks kept as declared: the cost model cannot "
                            "estimate it (a dynamic shape, or a communication it does not know)")
