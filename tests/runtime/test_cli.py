"""hostir-run as a newcomer meets it: `-` is standard input, as for hostir-opt, and
`python -m hostir.runtime.cli` is hostir-run, not a module that does nothing."""

from __future__ import annotations

import io
import subprocess
import sys
from pathlib import Path

import pytest

from hostir.runtime.cli import console_main

ROOT = Path(__file__).resolve().parents[2]
ALLGATHER = ROOT / "examples/host_programs/host_allgather.mlir"


class _Stdin:
    def __init__(self, data: bytes) -> None:
        self.buffer = io.BytesIO(data)


def test_a_dash_reads_the_program_from_standard_input(monkeypatch, capsys) -> None:
    monkeypatch.setattr(sys, "stdin", _Stdin(ALLGATHER.read_bytes()))
    console_main(["-"])
    assert "output 0: shape [2, 8] dtype float32" in capsys.readouterr().out


def test_errors_in_standard_input_are_located_there(monkeypatch, capsys) -> None:
    monkeypatch.setattr(sys, "stdin", _Stdin(b"\n  fusion.nonsense\n"))
    with pytest.raises(SystemExit) as stopped:
        console_main(["-"])
    assert stopped.value.code == 1
    assert capsys.readouterr().err.startswith("<stdin>:2:3: error: ")


def test_python_m_runs_hostir_run() -> None:
    ran = subprocess.run([sys.executable, "-m", "hostir.runtime.cli", str(ALLGATHER)], capture_output=True,
                         text=True, cwd=ROOT, timeout=300)
    assert ran.returncode == 0 and "max error vs reference 0" in ran.stdout, ran.stderr
    bare = subprocess.run([sys.executable, "-m", "hostir.runtime.cli"], capture_output=True, text=True, timeout=300)
    assert bare.returncode == 2 and "the following arguments are required: file" in bare.stderr
