"""The cost model reads a machine's measured constants and predicts what they say."""

from __future__ import annotations

import json
from dataclasses import replace

import pytest

from hostir.passes import cost_model
from hostir.passes.choose_pipelining import estimate
from hostir.passes.cost_model import FALLBACK_MACHINE, Link, Machine, Topology, detected_gpus, detected_machine
from hostir_dialect import hir
from hostir_dialect.context import parse_module

COPY_ENGINE, NCCL = hir.Transport.COPY_ENGINE, hir.Transport.NCCL


@pytest.mark.parametrize("kind", [hir.AllgatherOp, hir.ReduceScatterOp, hir.AllreduceOp])
def test_the_copy_engines_carry_large_transfers(kind):
    assert Machine.load().fastest_transport(kind, 128 * 2**20, 2) == COPY_ENGINE


def test_nccl_carries_small_all_reductions():
    # NCCL's one round starts sooner than the copy engines' two phases, each with its signal.
    assert Machine.load().fastest_transport(hir.AllreduceOp, 1024, 2) == NCCL


def test_copy_engine_time_follows_the_algorithm_share_phases_and_reduction():
    machine = Machine.load()
    size = 64 * 2**20
    push = machine.copy_engine.ms(size / 2) + machine.signal_us / 1e3  # one chunk to the peer, one flag
    reduction = machine.memory_ms(3 * size / 2)  # two chunks read, one written
    assert machine.phases_ms(hir.AllgatherOp, COPY_ENGINE, size, 2) == [
        pytest.approx(machine.copy_engine.ms(size) + machine.signal_us / 1e3)]
    assert machine.phases_ms(hir.ReduceScatterOp, COPY_ENGINE, size, 2) == [pytest.approx(push + reduction)]
    # The all-reduce's second phase reduces, then pushes the reduced chunk.
    assert machine.phases_ms(hir.AllreduceOp, COPY_ENGINE, size, 2) == [pytest.approx(push),
                                                                       pytest.approx(reduction + push)]
    assert machine.collective_ms(hir.AllreduceOp, COPY_ENGINE, size, 2) == pytest.approx(2 * push + reduction)
    assert machine.phases_ms(hir.AllreduceOp, NCCL, size, 2) == [pytest.approx(machine.nccl["hir.allreduce"].ms(size))]


@pytest.mark.parametrize("kind, ring_bytes", [(hir.AllgatherOp, 3.0), (hir.ReduceScatterOp, 1.5), (hir.AllreduceOp, 1.5)])
def test_nccl_time_scales_from_the_measured_pair_to_the_team_as_a_ring_sends(kind, ring_bytes):
    """Constants are measured on two GPUs; on four, a ring sends 3x the input for an
    all-gather ((D-1) against 1), 1.5x for a reduce-scatter and an all-reduce ((D-1)/D
    against 1/2)."""
    machine = Machine.load(FALLBACK_MACHINE)
    size = 64 * 2**20
    link = machine.nccl[kind.name]
    assert machine.phases_ms(kind, NCCL, size, 2) == [pytest.approx(link.ms(size))]
    assert machine.phases_ms(kind, NCCL, size, 4) == [pytest.approx(link.ms(ring_bytes * size))]


def test_nccl_time_scales_from_the_team_the_constants_were_measured_on():
    """Constants measured on four GPUs (`team`) hold for four and scale to two by ring bytes."""
    pair = Machine.load(FALLBACK_MACHINE)
    four = replace(pair, team=4)
    size = 64 * 2**20
    link = four.nccl["hir.allreduce"]
    assert four.phases_ms(hir.AllreduceOp, NCCL, size, 4) == [pytest.approx(link.ms(size))]
    assert four.phases_ms(hir.AllreduceOp, NCCL, size, 2) == [pytest.approx(link.ms(size / 1.5))]


def test_a_machine_file_names_its_team_else_a_pair(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    assert Machine.load(FALLBACK_MACHINE).team == 2  # shipped before the team was recorded
    data = json.loads((cost_model.MACHINES / f"{FALLBACK_MACHINE}.json").read_text())
    measured = cost_model.user_machines() / "h200x4.json"
    measured.parent.mkdir(parents=True)
    measured.write_text(json.dumps(data | {"name": "h200x4", "team": 4}))
    assert Machine.load("h200x4").team == 4


def test_a_copy_engine_reduction_measured_whole_prices_the_team_it_was_measured_with():
    """`hostir-calibrate` times each reduction as hostir runs it (handshakes and contention
    included); other teams keep the pushes' price."""
    pushes = replace(Machine.load(FALLBACK_MACHINE), team=4, copy_engine_collectives={})
    measured = replace(pushes, copy_engine_collectives={"hir.allreduce": Link(120.0, 180.0)})
    size = 64 * 2**20
    whole = Link(120.0, 180.0).ms(size)
    assert measured.phases_ms(hir.AllreduceOp, COPY_ENGINE, size, 4) == [pytest.approx(whole / 2)] * 2
    assert measured.replayed().phases_ms(hir.AllreduceOp, COPY_ENGINE, size, 4) == [pytest.approx(whole / 2)] * 2
    for kind, team in ((hir.AllreduceOp, 2), (hir.ReduceScatterOp, 4)):
        assert measured.phases_ms(kind, COPY_ENGINE, size, team) == pushes.phases_ms(kind, COPY_ENGINE, size, team)


def test_a_copy_engine_reduction_of_more_than_two_is_chosen_only_as_measured_on_its_team():
    """Priced by their pushes, the copy engines' reductions at four GPUs looked faster than
    NCCL and ran slower: without a measurement of the team's size, `auto` keeps them on
    NCCL (an all-gather's pushes matched its pipelines, it stays priced by them)."""
    pair = replace(Machine.load(FALLBACK_MACHINE), copy_engine_collectives={})
    size = 128 * 2**20
    assert pair.fastest_transport(hir.AllreduceOp, size, 2) == COPY_ENGINE
    assert pair.fastest_transport(hir.AllgatherOp, size, 4) == COPY_ENGINE
    for kind in (hir.AllreduceOp, hir.ReduceScatterOp):
        assert pair.fastest_transport(kind, size, 4) == NCCL
        assert "of 4 members is priced only as measured on 4 GPUs" in (pair.copy_engines_unpriced(kind, 4) or "")
    measured = replace(pair, team=4, copy_engine_collectives={"hir.allreduce": Link(10.0, 1000.0)})
    assert measured.fastest_transport(hir.AllreduceOp, size, 4) == COPY_ENGINE
    assert measured.fastest_transport(hir.ReduceScatterOp, size, 4) == NCCL
    assert measured.fastest_transport(hir.AllreduceOp, size, 3) == NCCL


def test_a_machine_file_may_hold_measured_copy_engine_reductions(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    data = json.loads((cost_model.MACHINES / f"{FALLBACK_MACHINE}.json").read_text())
    measured = cost_model.user_machines() / "h200x4.json"
    measured.parent.mkdir(parents=True)
    lines = {"hir.allreduce": {"latency_us": 120.0, "gbps": 180.0}}
    measured.write_text(json.dumps(data | {"name": "h200x4", "team": 4, "copy_engine_collectives": lines}))
    assert Machine.load("h200x4").copy_engine_collectives == {"hir.allreduce": Link(120.0, 180.0)}


def test_a_slowdown_measured_per_ms_of_gemm_is_read_per_ms_of_the_shorter(tmp_path, monkeypatch):
    """A user's cache from before the fifteenth session holds `matmul_slowdown` per ms of
    hostir-calibrate's GEMM; it is converted with the machine's own rate and lines: the
    GEMM's time over the shorter one's (here the 128 MiB transfer's)."""
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    data = json.loads((cost_model.MACHINES / f"{FALLBACK_MACHINE}.json").read_text())
    assert data.pop("matmul_slowdown_per") == cost_model.SLOWDOWN_OF_THE_SHORTER
    older = cost_model.user_machines() / "h200x4.json"
    older.parent.mkdir(parents=True)
    older.write_text(json.dumps(data | {"name": "h200x4", "matmul_slowdown": {"nccl": 0.355, "copy_engine": 0.037}}))
    machine = Machine.load("h200x4")
    m, k, n = cost_model.SLOWDOWN_GEMM
    gemm = machine.matmul_ms(2 * m * k * n, "bf16")
    nccl = machine.nccl["hir.allgather"].ms(cost_model.SLOWDOWN_TRANSFER_BYTES)
    copy = machine.copy_engine.ms(cost_model.SLOWDOWN_TRANSFER_BYTES)
    assert machine.matmul_slowdown == {"nccl": pytest.approx(0.355 * gemm / nccl, abs=1e-3),
                                       "copy_engine": pytest.approx(0.037 * gemm / copy, abs=1e-3)}
    assert 0.7 < machine.matmul_slowdown["nccl"] < 0.9  # about what 2x H200 measures per ms of the shorter
    # The shipped files are in the model's terms already.
    assert Machine.load(FALLBACK_MACHINE).matmul_slowdown == data["matmul_slowdown"]


def test_a_copy_engine_phase_pushes_to_its_peers_one_after_the_other():
    machine = Machine.load(FALLBACK_MACHINE)
    size = 64 * 2**20
    signal = machine.signal_us / 1e3
    assert machine.phases_ms(hir.AllgatherOp, COPY_ENGINE, size, 4) == [pytest.approx(3 * machine.copy_engine.ms(size) + signal)]
    reduction = machine.memory_ms(5 * size / 4)  # four chunks read, one written
    assert machine.phases_ms(hir.ReduceScatterOp, COPY_ENGINE, size, 4) == [
        pytest.approx(3 * machine.copy_engine.ms(size / 4) + signal + reduction)]


def test_beside_matmuls_the_transport_that_slows_them_less_can_win():
    # Four posts of 8 MB: alone NCCL's one round beats the copy engines' two phases; beside
    # 1 ms of matmuls, which NCCL's kernels slow more than the copy engines' transfers do,
    # the copy engines win.
    machine = Machine.load()
    size, posts = 8 * 2**20, 4
    assert machine.fastest_transport(hir.AllreduceOp, size, 2, posts) == NCCL
    assert machine.fastest_transport(hir.AllreduceOp, size, 2, posts, matmuls_ms=1.0) == COPY_ENGINE
    nccl = machine.posts_ms(hir.AllreduceOp, NCCL, size, 2, posts)
    per_phase = posts * machine.gpu_us_per_phase / 1e3  # NCCL's one phase a post
    assert machine.beside_ms(hir.AllreduceOp, NCCL, size, 2, posts, 1.0) == pytest.approx(
        1.0 + machine.matmul_slowdown["nccl"] * nccl + per_phase)
    assert machine.beside_ms(hir.AllreduceOp, NCCL, size, 2, posts, 0.0) == pytest.approx(nccl + per_phase)


def test_the_longer_of_transfers_and_matmuls_is_extended_by_the_shorters_share_that_does_not_overlap():
    machine = replace(Machine.load(), gpu_us_per_phase=0.0)
    size, posts = 32 * 2**20, 4
    nccl = machine.posts_ms(hir.AllreduceOp, NCCL, size, 2, posts)
    share = machine.matmul_slowdown["nccl"]
    for matmuls in (nccl / 4, 4 * nccl):  # the transfers longer, then the matmuls
        assert machine.beside_ms(hir.AllreduceOp, NCCL, size, 2, posts, matmuls) == pytest.approx(
            max(nccl, matmuls) + share * min(nccl, matmuls))
    # With none of it overlapping, beside is one after the other.
    serial = replace(machine, matmul_slowdown={"nccl": 1.0, "copy_engine": 1.0})
    assert serial.beside_ms(hir.AllreduceOp, NCCL, size, 2, posts, nccl / 4) == pytest.approx(1.25 * nccl)


def test_each_phase_of_each_post_pays_the_gpus_per_phase_cost_beside_the_matmuls():
    machine = Machine.load()
    size, posts = 8 * 2**20, 4
    without = replace(machine, gpu_us_per_phase=0.0)
    extra = machine.beside_ms(hir.AllreduceOp, COPY_ENGINE, size, 2, posts, 1.0) - without.beside_ms(
        hir.AllreduceOp, COPY_ENGINE, size, 2, posts, 1.0)
    assert extra == pytest.approx(posts * 2 * machine.gpu_us_per_phase / 1e3)  # two phases a post


def test_replayed_from_a_graph_a_copy_engine_phase_pays_its_replayed_cost_not_eager_launches():
    machine = Machine.load()
    replayed = machine.replayed()
    size = 8 * 2**20
    assert replayed.phases_ms(hir.AllgatherOp, COPY_ENGINE, size, 2) == [pytest.approx(size / (machine.copy_engine.gbps * 1e6))]
    assert replayed.phases_ms(hir.AllgatherOp, NCCL, size, 2) == machine.phases_ms(hir.AllgatherOp, NCCL, size, 2)
    assert replayed.gpu_us_per_phase == machine.gpu_us_per_phase
    # Constants measured before the replayed per-phase cost keep their eager fixed costs.
    older = replace(machine, gpu_us_per_phase=0.0)
    assert older.replayed() == older


def test_a_collective_without_a_copy_engine_algorithm_stays_on_nccl():
    assert Machine.load().fastest_transport(hir.BroadcastOp, 2**30, 2) == NCCL


def test_matmul_rate_approaches_the_sustained_rate_with_size():
    machine = Machine.load()
    big, small = 2 * 16384 * 8192 * 4096, 2 * 256 * 256 * 256
    big_rate, small_rate = big / machine.matmul_ms(big, "bf16"), small / machine.matmul_ms(small, "bf16")
    assert small_rate < 0.5 * big_rate
    assert big_rate == pytest.approx(machine.matmul_tflops["bf16"] * 1e9, rel=0.05)


def test_an_unknown_machine_names_the_known_ones():
    with pytest.raises(ValueError, match=r"no cost model for machine 'tpu'; known: detect, .*h200x2"):
        Machine.load("tpu")


def _driver(tmp_path, *models: str):
    """A /proc/driver/nvidia/gpus of GPUs with these models."""
    for index, model in enumerate(models):
        gpu = tmp_path / f"0000:{index:02x}:00.0"
        gpu.mkdir(parents=True)
        (gpu / "information").write_text(f"Model: \t\t {model}\nIRQ:   \t\t 42\n")
    return tmp_path


def test_the_gpus_are_read_from_the_driver(tmp_path):
    assert detected_gpus(_driver(tmp_path / "a", "NVIDIA H100 80GB HBM3", "NVIDIA H100 80GB HBM3")) == ("h100", 2)
    assert detected_gpus(_driver(tmp_path / "b", "NVIDIA H200")) == ("h200", 1)
    assert detected_gpus(_driver(tmp_path / "c", "NVIDIA H100 80GB HBM3", "NVIDIA A100-SXM4-80GB")) is None
    assert detected_gpus(tmp_path / "none") is None


def test_detect_picks_this_machines_constants_measured_or_shipped_else_the_fallback(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    eight_b200 = _driver(tmp_path / "b200", *["NVIDIA B200"] * 8)
    assert detected_machine(tmp_path / "no-gpu") == FALLBACK_MACHINE
    assert detected_machine(eight_b200) == FALLBACK_MACHINE  # never measured
    measured = cost_model.user_machines() / "b200x2.json"
    measured.parent.mkdir(parents=True)
    shipped = (cost_model.MACHINES / f"{FALLBACK_MACHINE}.json").read_text()
    measured.write_text(shipped.replace(f'"name": "{FALLBACK_MACHINE}"', '"name": "b200x2"'))
    assert detected_machine(eight_b200) == "b200x2"  # hostir-calibrate measured it here
    assert Machine.load("b200x2").name == "b200x2"
    monkeypatch.setattr(cost_model, "NVIDIA_GPUS", tmp_path / "no-gpu")
    assert Machine.load("detect").name == FALLBACK_MACHINE


def test_detect_prefers_constants_measured_on_all_of_the_hosts_gpus(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    cache = cost_model.user_machines()
    cache.mkdir(parents=True)
    shipped = (cost_model.MACHINES / f"{FALLBACK_MACHINE}.json").read_text()
    four_b200 = _driver(tmp_path / "b200", *["NVIDIA B200"] * 4)
    (cache / "b200x2.json").write_text(shipped)
    assert detected_machine(four_b200) == "b200x2"  # no four-GPU constants: the pair's
    (cache / "b200x4.json").write_text(shipped)
    assert detected_machine(four_b200) == "b200x4"
    assert detected_machine(_driver(tmp_path / "b200-8", *["NVIDIA B200"] * 8)) == "b200x2"


# --------------------------------------------------------------------------- #
# Nodes (docs/multi_node.md)
# --------------------------------------------------------------------------- #


def test_ranks_sit_on_nodes_in_order_of_rank(monkeypatch):
    monkeypatch.delenv("LOCAL_WORLD_SIZE", raising=False)
    assert Topology.of(0) == Topology()  # no torchrun: one node
    assert not Topology().spans_nodes(range(1024))
    monkeypatch.setenv("LOCAL_WORLD_SIZE", "8")
    eight = Topology.of(0)
    assert eight == Topology.of(8) == Topology(8)
    assert not eight.spans_nodes([8, 9, 15]) and eight.spans_nodes([7, 8])
    assert eight.copy_engine_problem([0, 7]) is None
    assert "spans nodes of 8 ranks each" in eight.copy_engine_problem([0, 8])
    with pytest.raises(ValueError, match="ranks-per-node must be positive"):
        Topology.of(-1)


INFINIBAND = {"hir.allgather": Link(latency_us=100.0, gbps=45.0)}
"""A made-up inter-node link (NDR InfiniBand, 400 Gb/s per GPU, at NCCL's efficiency)."""


def test_a_team_across_nodes_is_priced_on_the_inter_node_link_and_never_on_copy_engines():
    machine = replace(Machine.load(FALLBACK_MACHINE), inter_node=INFINIBAND)
    size = 128 * 2**20
    assert machine.fastest_transport(hir.AllgatherOp, size, 16) == COPY_ENGINE
    assert machine.fastest_transport(hir.AllgatherOp, size, 16, copy_engines=False) == NCCL
    assert machine.collective_ms(hir.AllgatherOp, NCCL, size, 16, spans_nodes=True) == pytest.approx(
        INFINIBAND["hir.allgather"].ms(size))
    assert machine.fastest_phases_ms(hir.AllgatherOp, size, 16, spans_nodes=True) == pytest.approx(
        [INFINIBAND["hir.allgather"].ms(size)])
    assert machine.prices(hir.AllgatherOp, spans_nodes=True)
    assert not machine.prices(hir.AllreduceOp, spans_nodes=True)
    assert not Machine.load(FALLBACK_MACHINE).prices(hir.AllgatherOp, spans_nodes=True)  # one node


AG_MATMUL = """fusion.func @f(%a: !fusion.tensor<bf16[4, 4 didx, 256, 1024], mesh=[0, 1, 2, 3]>, %b: !fusion.tensor<bf16[1024, 512], mesh=[0, 1, 2, 3]>) -> !fusion.tensor<bf16[4 stream, 4, 256, 512, r1024], mesh=[0, 1, 2, 3]> {
  %g = fusion.set %a : !fusion.tensor<bf16[4, 4 didx, 256, 1024], mesh=[0, 1, 2, 3]> -> !fusion.tensor<bf16[4 stream, 4, 256, 1024], mesh=[0, 1, 2, 3]>
  %c = fusion.matmul %g, %b : !fusion.tensor<bf16[4 stream, 4, 256, 1024], mesh=[0, 1, 2, 3]>, !fusion.tensor<bf16[1024, 512], mesh=[0, 1, 2, 3]> -> !fusion.tensor<bf16[4 stream, 4, 256, 512, r1024], mesh=[0, 1, 2, 3]>
  fusion.return %c : !fusion.tensor<bf16[4 stream, 4, 256, 512, r1024], mesh=[0, 1, 2, 3]>
}"""


def test_a_pipeline_across_nodes_is_priced_only_with_inter_node_constants():
    """choose-pipelining keeps a pipeline it cannot price (docs/copy_engine.md)."""
    (func,) = parse_module(AG_MATMUL).ops
    one_node, two_nodes, machine = Topology(), Topology(2), Machine.load(FALLBACK_MACHINE)
    assert estimate(func, machine, one_node) is not None
    assert estimate(func, machine, two_nodes) is None
    across = estimate(func, replace(machine, inter_node=INFINIBAND), two_nodes)
    within = estimate(func, machine, one_node)
    assert across is not None and within is not None
    assert across.communication > within.communication  # 45 GB/s between nodes, 383 within


AR_2D = """fusion.func @f(%a: !fusion.tensor<bf16[4, 2 didy, 2 didx, 256, 512], mesh=[[0, 1], [2, 3]]>, %b: !fusion.tensor<bf16[2 didx, 512, 1024], mesh=[[0, 1], [2, 3]]>) -> !fusion.tensor<bf16[4 stream, 2 didy, r2, 256, 1024], mesh=[[0, 1], [2, 3]]> {
  %u = fusion.matmul %a, %b : !fusion.tensor<bf16[4, 2 didy, 2 didx, 256, 512], mesh=[[0, 1], [2, 3]]>, !fusion.tensor<bf16[2 didx, 512, 1024], mesh=[[0, 1], [2, 3]]> -> !fusion.tensor<bf16[4 stream, 2 didy, 2 didx, 256, 1024, r512], mesh=[[0, 1], [2, 3]]>
  %c = fusion.reduce sum %u dims [2] : !fusion.tensor<bf16[4 stream, 2 didy, 2 didx, 256, 1024, r512], mesh=[[0, 1], [2, 3]]> -> !fusion.tensor<bf16[4 stream, 2 didy, r2, 256, 1024], mesh=[[0, 1], [2, 3]]>
  fusion.return %c : !fusion.tensor<bf16[4 stream, 2 didy, r2, 256, 1024], mesh=[[0, 1], [2, 3]]>
}"""


def test_a_collective_on_each_row_is_priced_on_nccl_for_its_row():
    """An all-reduce along DIDx of a 2x2 mesh: teams of 2, on NCCL (the copy engines carry
    listed teams only); across nodes when the rows span them."""
    machine = Machine.load(FALLBACK_MACHINE)
    (func,) = parse_module(AR_2D).ops
    stages = estimate(func, machine, Topology())
    partial_sum_bytes = 4 * 256 * 1024 * 2  # the whole of one rank's partial product, bf16
    assert stages is not None
    assert stages.communication == pytest.approx(machine.collective_ms(hir.AllreduceOp, NCCL, partial_sum_bytes, 2))
    assert estimate(func, machine, Topology(2)) is not None  # rows [0, 1] and [2, 3] are nodes
    assert estimate(func, machine, Topology(1)) is None  # every row spans two nodes: not priced
