"""benchmarks/compile_time.py on small fusions, so that it cannot rot: its fusions lower,
and it times parsing, every pass of hostir-lower, the verification and printing."""

from __future__ import annotations

import sys
from pathlib import Path

from hostir.passes import PIPELINES, lower
from hostir_dialect.context import parse_module

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))
import compile_time  # noqa: E402


def test_the_fusion_has_the_requested_number_of_ops_and_lowers():
    module = parse_module(compile_time.fusion_text(20))
    (func,) = module.ops
    assert len(func.body.block.ops) == 20 + 1  # and the return
    text = str(lower(module, pipeline="hostir-lower{transport=nccl}"))  # the pipeline as written
    assert "hir.allgather" in text and "hir.post_on_stream" in text and "scf.for" in text


def test_every_step_is_timed_with_its_growth(capsys):
    results = compile_time.main(["--sizes", "10", "30", "--repeat", "1"])
    steps = list(results["seconds"][30])
    assert steps == ["parse (xDSL Parser)", "parse", "verify input", *PIPELINES["hostir-lower"],
                     "verification", "print", "total (parse to print)"]
    assert all(seconds > 0 for seconds in results["seconds"][30].values())
    table = capsys.readouterr().out
    assert "| verification |" in table and "N^" in table
