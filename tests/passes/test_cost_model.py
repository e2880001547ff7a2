"""The cost model reads a machine's measured constants and predicts what they say."""

from __future__ import annotations

import pytest

from hostir.passes.cost_model import Machine
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
    with pytest.raises(ValueError, match=r"no cost model for machine 'tpu'; known: h200x2"):
        Machine.load("tpu")
