"""hostir-calibrate (runtime/calibrate.py): measures on all of a host's GPUs (at least two), refuses elsewhere."""

from __future__ import annotations

import pytest
import torch

from hostir.runtime import calibrate


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


def test_the_slowdown_is_the_time_a_transfer_adds_to_the_gemm_per_ms_of_gemm():
    assert calibrate.slowdown(1.45, 1.965) == pytest.approx(0.355)
    # Timing noise that makes both together faster than the GEMM alone is no speed-up.
    assert calibrate.slowdown(1.45, 1.44) == 0.0


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
    # GEMMs replayed from a graph: what small ones take beyond the peak rate is the GPU's
    # few µs (a kernel trace on H200: 1.8 GFLOP), not the host's launches (10 or more).
    assert constants["matmul_half_rate_gflop"]["bf16"] < 6
