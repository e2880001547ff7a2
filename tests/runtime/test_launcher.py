"""The multi-rank launcher and `hostir-run`: failures stop every rank and name the culprit."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import time
from pathlib import Path

import pytest
import torch

from hostir_dialect import parse_module
from runtime import Job, SpmdError, run_spmd, run_spmd_batch
from runtime.cli import console_main

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "examples"
HOST_PROGRAMS = EXAMPLES / "host_programs"

X = "!fusion.tensor<f32[2 didx, 4], mesh=[0, 1]>"
G = "!fusion.tensor<f32[2, 4], mesh=[0, 1]>"
ALLGATHER = f"""hir.program @main(%x: {X}) -> {G} {{
  %o = hir.allocate : {G}
  %w = hir.allgather %x -> %o team [0, 1] : {X} -> {G}
  hir.wait %w
  hir.return %o : {G}
}}"""


def test_run_spmd_returns_every_ranks_outputs():
    shards = [[torch.full((1, 4), 1.0)], [torch.full((1, 4), 2.0)]]
    outputs = run_spmd(ALLGATHER, shards, world_size=2, backend="gloo")
    expected = torch.tensor([[1.0] * 4, [2.0] * 4])
    assert [len(o) for o in outputs] == [1, 1]
    assert all(torch.equal(o[0], expected) for o in outputs)


def test_a_failing_rank_stops_the_others_and_is_named():
    # Rank 1 gets a wrongly shaped input and fails before posting; rank 0 would wait for
    # it in the allgather forever if the launcher did not stop it.
    shards = [[torch.zeros(1, 4)], [torch.zeros(3, 4)]]
    start = time.monotonic()
    with pytest.raises(SpmdError, match=r"rank 1 failed: InputError: @main argument 0 \(%x\): expected shape \[1, 4\]"):
        run_spmd_batch([Job(ALLGATHER, shards)], world_size=2, backend="gloo", collective_timeout=60)
    assert time.monotonic() - start < 50, "the launcher waited for the collective timeout"


def test_a_rank_blocked_on_a_missing_peer_times_out():
    # Only rank 0 holds the buffer, so only it receives; nobody sends.
    T = "!fusion.tensor<f32[4], mesh=[0]>"
    program = f"""hir.program @main(%x: {T}, %peer: index) -> {T} {{
  %w = hir.recv %x, %peer : {T}
  hir.wait %w
  hir.return %x : {T}
}}"""
    with pytest.raises(SpmdError, match=r"rank 0 failed: .*(?i:timed out|timeout)"):
        run_spmd_batch([Job(program, [[torch.zeros(4), 1], [None, 0]])], world_size=2, backend="gloo",
                       collective_timeout=3)


def hostir_run(*args: str) -> subprocess.CompletedProcess:
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    command = [sys.executable, "-c", "from runtime.cli import console_main; console_main()", *args]
    return subprocess.run(command, capture_output=True, text=True, env=env, cwd=ROOT, timeout=240)


def test_hostir_run_prints_outputs_matching_the_reference():
    result = hostir_run(str(HOST_PROGRAMS / "host_allgather_matmul.mlir"), "--nproc", "2", "--number-of-streams", "2",
                        "--repeat", "2", "--seed", "3")
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert lines[0].startswith("output 0: shape [2, 2, 4, 16] dtype float32 checksum ")
    error = float(lines[0].rsplit("max error vs reference ", 1)[1])
    assert error < 1e-5
    assert lines[1].startswith("median time: ") and lines[1].endswith("over 2 run(s) on 2 rank(s)")


def cli_error(args: list[str], capsys) -> str:
    """Run hostir-run in this process; it must exit 1 with a one-line message."""
    with pytest.raises(SystemExit) as exit_info:
        console_main(args)
    assert exit_info.value.code == 1
    stderr = capsys.readouterr().err
    assert stderr.count("\n") == 1 and "Traceback" not in stderr, stderr
    return stderr


@pytest.mark.parametrize("args, message", [
    (["missing.mlir"], r"^hostir-run: error: cannot read missing.mlir"),
    ([str(HOST_PROGRAMS / "host_allgather.mlir"), "--nproc", "0"], r"^hostir-run: error: --nproc must be at least 1"),
    ([str(HOST_PROGRAMS / "host_allgather.mlir"), "--inputs", "a.pt", "b.pt"], r"@main takes 1 inputs, 2 files given"),
    ([str(HOST_PROGRAMS / "host_allgather.mlir"), "--inputs", "missing.pt"], r"cannot load missing.pt"),
    ([str(HOST_PROGRAMS / "host_allgather.mlir"), "--program", "nope"], r"no hir.program or fusion.func named @nope"),
])
def test_hostir_run_bad_input_exits_1_with_one_line(args, message, capsys):
    assert re.search(message, cli_error(args, capsys))


def test_hostir_run_refuses_inputs_of_the_wrong_shape(tmp_path, capsys):
    path = tmp_path / "x.pt"
    torch.save(torch.zeros(3, 8), path)
    stderr = cli_error([str(HOST_PROGRAMS / "host_allgather.mlir"), "--inputs", str(path)], capsys)
    assert re.search(r"argument 0 \(%x\): expected shape \[2, 8\] .* got \[3, 8\]", stderr)


@pytest.mark.parametrize("text, where, message", [
    ("hir.program @main() {\n  %x = hir.bogus\n}\n", 2, "Operation hir.bogus is not registered"),
    ("!t = !fusion.tensor<f32[4]>\nhir.program @main(%a: !t) -> !t {\n"
     "  %b = fusion.add %a, %a : !t, !t -> !fusion.tensor<f32[5]>\n  hir.return %a : !t\n}\n", 3,
     "'fusion.add' op result axes [5] do not match"),
])
def test_hostir_run_reports_bad_ir_at_its_location(tmp_path, capsys, text, where, message):
    bad = tmp_path / "bad.mlir"
    bad.write_text(text)
    stderr = cli_error([str(bad)], capsys)
    assert stderr.startswith(f"{bad}:{where}:") and "error: " in stderr and message in stderr, stderr


def test_a_rank_error_in_a_lowered_fusion_names_the_users_file():
    # The ranks read the lowered program as text; its ops keep the user's locations, so
    # the division's failure points at line 3 of user.mlir, not into the generated text.
    I = "!fusion.tensor<i32[2 didx, 4], mesh=[0, 1]>"
    fusion = f"""fusion.func @f(%a: {I}, %b: {I}) -> {I} {{
  %q = fusion.div %a, %b : {I}, {I} -> {I}
  fusion.return %q : {I}
}}"""
    shards = [[torch.ones(1, 4, dtype=torch.int32), torch.zeros(1, 4, dtype=torch.int32)]] * 2
    with pytest.raises(SpmdError, match=r"rank \d failed: ExecutionError: user.mlir:2:3: error: 'fusion.div' op failed"):
        run_spmd(parse_module(fusion, "user.mlir"), shards, world_size=2, backend="gloo", lower=True)


@pytest.mark.parametrize("example", sorted(EXAMPLES.glob("*/*.mlir")), ids=lambda p: f"{p.parent.name}/{p.name}")
def test_hostir_run_runs_every_example_with_its_defaults(example, capsys):
    # On the ranks its meshes name, checked against its reference (exit 1 if it differs).
    console_main([str(example)])
    out = capsys.readouterr().out
    assert "max error vs reference" in out and "median time" in out, out
