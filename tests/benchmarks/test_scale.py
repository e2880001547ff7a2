"""benchmarks/scale.py: its programs lower at every device count, their op counts and
printed sizes do not grow with it (issue 30), and the script runs end to end. Nothing
here is timed: CI has two slow cores."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))
import scale  # noqa: E402


@pytest.mark.parametrize("name", list(scale.PROGRAMS))
def test_a_program_is_the_same_size_on_8_to_512_devices(name):
    """The same ops, and text that grows only by the digits of the device ids (a listed
    mesh of 512 devices alone is 2,500 characters)."""
    compiled = {d: scale.compilation(scale.PROGRAMS[name](d)) for d in (8, 64, 512)}
    assert len({c["ops"] for c in compiled.values()}) == 1, {d: c["ops"] for d, c in compiled.items()}
    chars = [c["chars"] for c in compiled.values()]
    assert max(chars) <= 1.1 * min(chars), chars


def test_at_one_device_nothing_communicates():
    for name, program in scale.PROGRAMS.items():
        assert scale.compilation(program(1))["ops"] <= scale.compilation(program(2))["ops"], name


def test_grids_are_the_squarest():
    assert [scale.grid(d).shape for d in (1, 2, 8, 64, 512, 1024)] == [
        (1, 1), (1, 2), (2, 4), (8, 8), (16, 32), (32, 32)]


def test_the_script_prints_a_table_and_writes_json(tmp_path, capsys):
    path = tmp_path / "scale.json"
    results = scale.main(["--devices", "1", "2", "--repeat", "1", "--programs", "ring", "2-D matmul+AR",
                          "--json", str(path)])
    assert json.loads(path.read_text())["programs"].keys() == results["programs"].keys() == {"ring", "2-D matmul+AR"}
    row = results["programs"]["ring"][2]
    assert row["ops"] > results["programs"]["ring"][1]["ops"] and row["rss_mb"] > 0 and row["total"] > 0
    assert "| 2-D matmul+AR | 2 (1x2) |" in capsys.readouterr().out
    with pytest.raises(SystemExit):
        scale.main(["--devices", "3"])
