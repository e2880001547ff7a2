"""HOSTIR_CHECK_CACHES=1: a cached answer is worked out again on every hit, so a question
that reads outside its key is caught; every example lowers with the checks on."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from hostir.passes import lower
from hostir_dialect import cache_check, fusion
from hostir_dialect.context import parse_module
from hostir_dialect.fusion import ShapeTable

ROOT = Path(__file__).resolve().parents[2]
T = "!fusion.tensor<f32[4, 8]>"
TWO_NEGS = f"""fusion.func @f(%a: {T}) -> ({T}) {{
  %b = fusion.neg %a : {T} -> {T}
  %c = fusion.neg %b : {T} -> {T}
  fusion.return %c : {T}
}}
"""


def reads_the_producer(op: fusion.ComputeOp) -> bool:
    """A question that reads outside `shape_of(op)`: whether its input is a block argument."""
    return op.operands[0].owner is op.parent_block()


def negs() -> list[fusion.ComputeOp]:
    func = parse_module(TWO_NEGS).ops.first
    return [op for op in func.body.ops if isinstance(op, fusion.NegOp)]


def test_a_question_reading_outside_its_key_is_caught(monkeypatch) -> None:
    first, second = negs()
    assert fusion.shape_of(first) == fusion.shape_of(second)
    unchecked = ShapeTable()
    assert unchecked.answer(first, reads_the_producer) is True
    assert unchecked.answer(second, reads_the_producer) is True  # stale: the second reads the first's result
    monkeypatch.setattr(cache_check, "CHECKING", True)
    checked = ShapeTable()
    checked.answer(first, reads_the_producer)
    with pytest.raises(cache_check.StaleCacheError, match="reads_the_producer of an op 'fusion.neg'.* True.* False"):
        checked.answer(second, reads_the_producer)


def test_a_check_that_now_raises_is_a_difference(monkeypatch) -> None:
    monkeypatch.setattr(cache_check, "CHECKING", True)
    first, second = negs()
    table = ShapeTable()
    table.answer(first, lambda op: None)

    def raises_for_the_second(op):
        if op is second:
            raise ValueError("refused")

    with pytest.raises(cache_check.StaleCacheError, match="refused"):
        table.answer(second, raises_for_the_second)


FUSIONS = sorted((ROOT / "examples" / "fusions").glob("*.mlir"))


@pytest.mark.parametrize("path", FUSIONS, ids=[p.stem for p in FUSIONS])
@pytest.mark.parametrize("pipeline", ["hostir-lower", "hostir-lower{transport=auto}"])
def test_every_example_lowers_with_its_caches_checked(monkeypatch, path: Path, pipeline: str) -> None:
    monkeypatch.setattr(cache_check, "CHECKING", True)
    lower(parse_module(path.read_text(), str(path)), pipeline=pipeline)


def test_the_variable_turns_the_checks_on() -> None:
    code = "from hostir_dialect import cache_check; print(cache_check.CHECKING)"
    for value, expected in (("1", "True"), ("0", "False")):
        env = {**os.environ, cache_check.VARIABLE: value}
        printed = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True)
        assert printed.stdout.strip() == expected
