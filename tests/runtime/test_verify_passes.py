"""Numerical verification of each pass (runtime/verify_passes.py, hostir-opt
--verify-each-pass-numerically): deliberately broken passes, defined and registered here
only, are caught and named with the output they changed; the real pipeline keeps every
example's outputs."""

from __future__ import annotations

import io
import re
import time
from dataclasses import dataclass
from pathlib import Path

import pytest
from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp
from xdsl.passes import ModulePass
from xdsl.rewriter import Rewriter

from hostir.passes import PIPELINES, opt
from hostir.passes.pipeline import PassManagerOptions, build_passes, run_passes
from hostir.runtime.verify_passes import NumericalCheck
from hostir_dialect import fusion, hir
from hostir_dialect.context import make_context, parse_module
from hostir_dialect.diagnostics import HostIRError, located_like
from hostir_dialect.fusion import ReduceKind, ReduceKindAttr
from hostir_dialect.tensor_type import tensor_type

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
FUSIONS, HOST_PROGRAMS = EXAMPLES / "fusions", EXAMPLES / "host_programs"


@dataclass(frozen=True)
class SubtractInsteadOfAdd(ModulePass):
    """Deliberately broken: every fusion.add becomes a fusion.sub."""

    name = "test-subtract-instead-of-add"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        for add in [o for o in op.walk() if isinstance(o, fusion.AddOp)]:
            sub = fusion.SubOp(add.lhs, add.rhs, tensor_type(add.result), add.out)
            Rewriter.replace_op(add, located_like(sub, add))


@dataclass(frozen=True)
class MaxInsteadOfSum(ModulePass):
    """Deliberately broken: every hir.allreduce takes the maximum instead of the sum."""

    name = "test-max-instead-of-sum"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        for allreduce in op.walk():
            if isinstance(allreduce, hir.AllreduceOp):
                allreduce.reduction = ReduceKindAttr(ReduceKind.MAX)


@dataclass(frozen=True)
class GatherFromOneRank(ModulePass):
    """Deliberately broken: every hir.allgather keeps only the first member of its team,
    whose output is then too large: the program fails on that rank."""

    name = "test-gather-from-one-rank"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        for allgather in op.walk():
            if isinstance(allgather, hir.AllgatherOp):
                allgather.team = hir.TeamAttr.of(allgather.teams.devices[:1])


BROKEN = {cls.name: cls for cls in (SubtractInsteadOfAdd, MaxInsteadOfSum, GatherFromOneRank)}


def pipeline(*names: str) -> list[ModulePass]:
    available = {**opt.registered_passes(), **{name: (lambda cls=cls: cls) for name, cls in BROKEN.items()}}
    return build_passes(",".join(names), available)


def check(example: Path, passes: list[ModulePass], **options) -> str:
    """Run `passes` on an example with the numerical check (and PassManagerOptions
    `options`): what it reports."""
    report = io.StringIO()
    module = parse_module(example.read_text(), example.name)
    run_passes(make_context(), module, passes, PassManagerOptions(check=NumericalCheck(report=report), **options))
    return report.getvalue()


def test_a_pass_that_breaks_a_fusion_is_named_with_the_op_it_changed():
    # The fusion's outputs change before lowering: found by one process, no world of ranks needed.
    with pytest.raises(HostIRError) as error:
        check(FUSIONS / "single_binary_op.mlir", pipeline("propagate-shardings", "test-subtract-instead-of-add", "hostir-lower"))
    message = str(error.value)
    assert message.startswith("single_binary_op.mlir:9:5: error: 'fusion.sub' op defines output 0 of "
                              "@single_binary_op, which pass 'test-subtract-instead-of-add' changed: "
                              "Tensor-likes are not close!; Mismatched elements: "), message


def test_a_pass_that_breaks_a_host_program_is_named_with_the_rank_and_op():
    # After lowering: each of the 2 ranks runs the program on its shards.
    with pytest.raises(HostIRError) as error:
        check(FUSIONS / "allreduce.mlir", pipeline("hostir-lower", "test-max-instead-of-sum", "insert-deallocations"))
    message = str(error.value)
    assert message.startswith("allreduce.mlir:11:5: error: 'hir.allocate' op defines output 0 of @allreduce, which "
                              "pass 'test-max-instead-of-sum' changed on rank 0: Tensor-likes are not close!"), message


def test_a_pass_after_which_the_program_fails_is_named_with_the_failure():
    # The verifier would refuse the broken allgather right after the pass; without it, the
    # ranks refuse it when they read the program.
    with pytest.raises(HostIRError) as error:
        check(FUSIONS / "allgather.mlir", pipeline("hostir-lower", "test-gather-from-one-rank"),
              verify=False, verify_each=False)
    message = str(error.value)
    assert re.match(r"error: pass 'test-gather-from-one-rank' changed the outputs of @allgather: after it the "
                    r"program fails: rank [01] failed: HostIRError: <IR after test-gather-from-one-rank>:\d+:\d+: "
                    r"error: 'hir.allgather' op output has \d+ elements, expected (\d+) \(team of 1 x \1\)", message), message


@pytest.mark.parametrize("example", sorted(p.name for p in FUSIONS.glob("*.mlir")))
def test_the_lowering_keeps_the_outputs_of_every_example(example):
    passes = PIPELINES["hostir-lower"]
    report = check(FUSIONS / example, pipeline("hostir-lower"))
    assert report.startswith(f"verify-each-pass-numerically: {len(passes)} pass(es) keep the outputs of @"), report


def test_the_copy_engine_lowering_keeps_the_outputs():
    passes = pipeline("hostir-lower{transport=copy-engine}")
    report = check(FUSIONS / "ag_matmul.mlir", passes)
    assert report == (f"verify-each-pass-numerically: {len(passes)} pass(es) keep the outputs of @ag_matmul "
                      "(seed 0, host programs on 2 ranks)\n")


def test_passes_on_a_host_program_are_checked_against_it():
    report = check(HOST_PROGRAMS / "host_allgather.mlir", pipeline("insert-deallocations", "canonicalize"))
    assert report == ("verify-each-pass-numerically: 2 pass(es) keep the outputs of @main "
                      "(seed 0, host programs on 2 ranks)\n")


class OptWithBrokenPasses(opt.HostIROptMain):
    def register_all_passes(self) -> None:
        super().register_all_passes()
        for name, cls in BROKEN.items():
            self.register_pass(name, lambda cls=cls: cls)


def test_hostir_opt_reports_the_pass_in_one_located_line(capsys):
    path = str(FUSIONS / "single_binary_op.mlir")
    code = opt.main([path, "-p", "test-subtract-instead-of-add", "--verify-each-pass-numerically"],
                    tool=OptWithBrokenPasses)
    err = capsys.readouterr().err
    assert code == 1
    assert err.startswith(f"{path}:9:5: error: 'fusion.sub' op defines output 0 of @single_binary_op, which pass "
                          "'test-subtract-instead-of-add' changed: ") and err.count("\n") == 1, err


ENDLESS = """hir.program @main(%a: !fusion.tensor<f32[4]>) -> !fusion.tensor<f32[4]> {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %n = arith.constant 1000000000000 : index
  scf.for %i = %c0 to %n step %c1 {
    %b = fusion.neg %a : !fusion.tensor<f32[4]> -> !fusion.tensor<f32[4]>
  }
  hir.return %a : !fusion.tensor<f32[4]>
}
"""


def test_a_run_that_never_ends_is_stopped_at_the_run_timeout(tmp_path, capsys):
    # Regression (issue 31, defect 5): the input was run in hostir-opt's own process,
    # without a time limit, and 10**12 iterations never ended.
    path = tmp_path / "endless.mlir"
    path.write_text(ENDLESS)
    start = time.monotonic()
    code = opt.main([str(path), "-p", "canonicalize", "--verify-each-pass-numerically", "--run-timeout", "2"])
    assert code == 1 and time.monotonic() - start < 60
    assert capsys.readouterr().err == ("error: --verify-each-pass-numerically cannot run the input: the 1 rank(s) "
                                       "did not finish within 2 s and were stopped\n")


@pytest.mark.parametrize("value", ["inf", "1e300", "0"])
def test_hostir_opt_refuses_run_timeouts_beyond_a_week(tmp_path, capsys, value):
    path = tmp_path / "endless.mlir"
    path.write_text(ENDLESS)
    assert opt.main([str(path), "--verify-each-pass-numerically", "--run-timeout", value]) == 1
    assert capsys.readouterr().err.startswith(
        "error: --run-timeout must be positive and at most 604800 seconds (a week), got ")
