"""The cost model reads a machine's measured constants and predicts what they say."""

from __future__ import annotations

import pytest

from passes.cost_model import Machine


def test_the_default_machine_loads_and_orders_transfers_by_size():
    machine = Machine.load()
    small, large = 1024, 128 * 2**20
    # NCCL's collectives start sooner; the copy engines move bytes faster.
    assert machine.collective_ms("hir.allreduce", False, small) < machine.collective_ms("hir.allreduce", True, small)
    assert machine.collective_ms("hir.allreduce", True, large) < machine.collective_ms("hir.allreduce", False, large)


def test_matmul_rate_approaches_the_sustained_rate_with_size():
    machine = Machine.load()
    big, small = 2 * 16384 * 8192 * 4096, 2 * 256 * 256 * 256
    big_rate, small_rate = big / machine.matmul_ms(big, "bf16"), small / machine.matmul_ms(small, "bf16")
    assert small_rate < 0.5 * big_rate
    assert big_rate == pytest.approx(machine.matmul_tflops["bf16"] * 1e9, rel=0.05)


def test_an_unknown_machine_names_the_known_ones():
    with pytest.raises(ValueError, match=r"no cost model for machine 'tpu'; known: h200x2"):
        Machine.load("tpu")
