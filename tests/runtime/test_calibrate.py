"""hostir-calibrate (runtime/calibrate.py): measures on all of a host's GPUs (at least two), refuses elsewhere."""

from __future__ import annotations

import math

import pytest
import torch

from hostir.passes import lower
from hostir.runtime import calibrate
from hostir_dialect import hir
from hostir_dialect.tensor_type import tensor_type


def test_it_refuses_a_machine_without_two_gpus(capsys, monkeypatch):
    monkeypatch.setattr(calibrate, "detected_gpus", lambda: None)
    assert calibrate.main([]) == 1
    assert capsys.readouterr().err == "hostir-calibrate: error: needs two NVIDIA GPUs of one kind on this host\n"


def test_it_refuses_more_gpus_than_the_host_has(capsys, monkeypatch):
    monkeypatch.setattr(calibrate, "detected_gpus", lambda: ("h200", 4))
    monkeypatch.setattr(torch.cuda, "device_count", lambda: 4)
    for gpus in ("1", "5"):
        assert calibrate.main(["--gpus", gpus]) == 1
        assert capsys.readouterr().err == (f"hostir-calibrate: error: --gpus {gpus}: this host has 4 GPUs; "
                                           "measure 2 to all of them\n")


def test_a_line_fit_gives_latency_and_bandwidth():
    points = [(n, 0.02 + n / 300e6) for n in (2**16, 2**20, 2**24, 2**28)]  # 20 us + 300 GB/s
    assert calibrate.fit_line(points) == {"latency_us": 20.0, "gbps": 300.0}


def test_the_matmul_rate_is_the_largest_gemms_and_the_half_rate_what_small_ones_take_beyond_it():
    peak, overhead_ms = 700e9, 0.003  # flops per ms (700 TFLOP/s), and 3 µs per GEMM
    sizes = (2 * 1024**3, 2 * 4096**3, 2 * 8192**2 * 1024, 2 * 16384 * 8192 * 4096, 2 * 512**3)
    points = [(f, f / peak + overhead_ms) for f in sizes]
    tflops, half_rate_gflop = calibrate.matmul_rate(points)
    # The largest GEMM's own 3 µs lowers the peak a little; the half rate is peak x overhead.
    assert tflops == pytest.approx(700, rel=2e-3)
    assert half_rate_gflop == pytest.approx(700e9 * overhead_ms / 1e9, rel=1e-2)


def test_the_slowdown_is_the_share_of_the_shorter_that_does_not_overlap_the_longer():
    # 2x H200: a 1.45 ms GEMM, a 0.61 ms NCCL all-gather, 1.966 ms together.
    assert calibrate.slowdown(1.45, 0.61, 1.966) == pytest.approx(0.846)
    assert calibrate.slowdown(0.61, 1.45, 1.966) == pytest.approx(0.846)  # whichever is longer
    # Timing noise: faster together than the longer alone is no speed-up, slower than
    # both one after the other no more than none of it overlapping.
    assert calibrate.slowdown(1.45, 0.61, 1.44) == 0.0
    assert calibrate.slowdown(1.45, 0.61, 2.1) == 1.0


@pytest.mark.parametrize("world", [2, 4])
@pytest.mark.parametrize("kind", ["hir.reduce_scatter", "hir.allreduce"])
def test_each_reduction_timed_alone_lowers_to_one_copy_engine_collective_of_its_bytes(kind, world):
    nbytes = 4 * 2**20
    module = lower(calibrate._reduction_alone(kind, world, nbytes).to_module(),
                   pipeline="hostir-lower{transport=copy-engine cuda-graph=true}")
    collectives = [op for op in module.walk() if isinstance(op, hir.CollectiveOp)]
    assert [op.name for op in collectives] == [kind]
    assert collectives[0].transport.data == hir.Transport.COPY_ENGINE
    source = tensor_type(collectives[0].operands[0])
    assert math.prod(source.local_shape(0)) * source.element_bytes() == nbytes


@pytest.mark.gpu
def test_replayed_work_computes_on_every_replay():
    if not torch.cuda.is_available():
        pytest.skip("needs a CUDA GPU")
    a, b = torch.randn(64, 32, device="cuda"), torch.randn(32, 16, device="cuda")
    c = torch.zeros(64, 16, device="cuda")
    replay = calibrate.replayed(lambda: torch.matmul(a, b, out=c))
    for scale in (2.0, 3.0):  # new operands in the captured buffers, a new product
        a.mul_(scale)
        c.zero_()
        replay()
        torch.cuda.synchronize()
        torch.testing.assert_close(c, a @ b)


@pytest.mark.gpu
def test_it_measures_every_constant_the_cost_model_reads(tmp_path):
    if torch.cuda.device_count() < 2:
        pytest.skip("needs 2 CUDA GPUs")
    out = tmp_path / "measured.json"
    assert calibrate.main(["--name", "measured", "--out", str(out)]) == 0
    import json

    constants = json.loads(out.read_text())
    assert constants["team"] == torch.cuda.device_count()  # all of the host's GPUs at once
    assert constants["matmul_tflops"]["bf16"] > 100 and constants["copy_engine"]["gbps"] > 50
    assert set(constants["nccl"]) == {"hir.allgather", "hir.reduce_scatter", "hir.allreduce"}
    assert constants["matmul_slowdown_per"] == "the shorter"
    # The reductions measured whole on teams of more than two only.
    measured = constants["copy_engine_collectives"]
    assert set(measured) == ({"hir.reduce_scatter", "hir.allreduce"} if constants["team"] > 2 else set())
    assert all(line["gbps"] > 10 for line in measured.values())
    # GEMMs replayed from a graph: what small ones take beyond the peak rate is the GPU's
    # few µs (a kernel trace on H200: 1.8 GFLOP), not the host's launches (10 or more).
    assert constants["matmul_half_rate_gflop"]["bf16"] < 6
