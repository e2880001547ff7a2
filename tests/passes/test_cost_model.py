"""The cost model reads a machine's measured constants and predicts what they say."""

from __future__ import annotations

import pytest

from hostir.passes import cost_model
from hostir.passes.cost_model import FALLBACK_MACHINE, Machine, detected_gpus, detected_machine
from hostir_dialect import hir

COPY_ENGINE, NCCL = hir.Transport.COPY_ENGINE, hir.Transport.NCCL


@pytest.mark.parametrize("kind", [hir.AllgatherOp, hir.ReduceScatterOp, hir.AllreduceOp])
def test_the_copy_engines_carry_large_transfers(kind):
    assert Machine.load().fastest_transport(kind, 128 * 2**20, 2) == COPY_ENGINE


def test_nccl_carries_small_all_reductions():
    # NCCL's one round starts sooner than the copy engines' two phases, each with its signal.
    assert Machine.load().fastest_transport(hir.AllreduceOp, 1024, 2) == NCCL


def test_copy_engine_time_follows_the_algorithm_share_and_phases():
    machine = Machine.load()
    size = 64 * 2**20
    gather = machine.collective_ms(hir.AllgatherOp, COPY_ENGINE, size, 2)
    scatter = machine.collective_ms(hir.ReduceScatterOp, COPY_ENGINE, size, 2)
    reduce = machine.collective_ms(hir.AllreduceOp, COPY_ENGINE, size, 2)
    assert gather == pytest.approx(machine.copy_engine.ms(size) + machine.signal_us / 1e3)
    assert scatter == pytest.approx(machine.copy_engine.ms(size / 2) + machine.signal_us / 1e3)
    assert reduce == pytest.approx(2 * scatter)


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
