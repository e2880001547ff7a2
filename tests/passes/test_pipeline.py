"""The pass pipeline hostir-opt and `passes.lower` drive (passes/pipeline.py): xDSL's
PassPipeline with one instrumentation callback -- run in order, disable by name, dump IR
after passes, time them and the verification, verify when the pipeline ends or after
each pass -- and pipelines expanded into their passes."""

from __future__ import annotations

import io
from dataclasses import dataclass

import pytest
from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp, UnitAttr
from xdsl.passes import ModulePass
from xdsl.utils.arg_spec import parse_pipeline

from hostir.passes import PIPELINES
from hostir.passes.pipeline import (
    ALL,
    VERIFICATION,
    VERIFY_EACH_VARIABLE,
    PassManagerOptions,
    PassRun,
    expand_specs,
    run_passes,
)
from hostir_dialect import hir
from hostir_dialect.context import make_context, parse_module
from hostir_dialect.diagnostics import HostIRError

# --------------------------------------------------------------------------- #
# The pass manager, with passes defined here
# --------------------------------------------------------------------------- #


@dataclass(frozen=True)
class TagAllocations(ModulePass):
    """Marks every hir.allocate with a `tagged` unit attribute."""

    name = "test-tag-allocations"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        for allocate in op.walk():
            if isinstance(allocate, hir.AllocateOp):
                allocate.attributes["tagged"] = UnitAttr()


@dataclass(frozen=True)
class BreakTheIR(ModulePass):
    """Adds an allgather with an empty team after the first allocation: invalid IR."""

    name = "test-break-ir"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        allocate = next(o for o in op.walk() if isinstance(o, hir.AllocateOp))
        assert allocate.parent is not None
        allocate.parent.insert_op_after(hir.AllgatherOp(allocate.result, allocate.result, []), allocate)


@dataclass(frozen=True)
class RepairTheIR(ModulePass):
    """Erases what BreakTheIR added."""

    name = "test-repair-ir"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        for allgather in [o for o in op.walk() if isinstance(o, hir.AllgatherOp)]:
            allgather.detach()
            allgather.erase()


PROGRAM = """hir.program @main() {
  %a = hir.allocate : !fusion.tensor<f32[4]>
  hir.return
}
"""


def run(passes: list[ModulePass], **options) -> tuple[ModuleOp, PassRun, str]:
    module = parse_module(PROGRAM, "program.mlir")
    stream = io.StringIO()
    result = run_passes(make_context(), module, passes, PassManagerOptions(dump_stream=stream, **options))
    return module, result, stream.getvalue()


def tagged(module: ModuleOp) -> bool:
    return any("tagged" in op.attributes for op in module.walk())


def test_passes_run_in_order_and_are_timed() -> None:
    module, result, dumped = run([TagAllocations()])
    assert tagged(module)
    assert [t.name for t in result.timings] == ["test-tag-allocations", VERIFICATION]
    assert result.skipped == [] and dumped == ""


def test_a_pass_is_disabled_by_name() -> None:
    module, result, _ = run([TagAllocations()], disabled=frozenset({"test-tag-allocations"}))
    assert not tagged(module)
    assert result.skipped == ["test-tag-allocations"] and result.timings == []


def test_print_ir_after_all() -> None:
    _, _, dumped = run([TagAllocations(), TagAllocations()], print_ir_after=frozenset({ALL}))
    assert dumped.count("// -----// IR Dump After test-tag-allocations //----- //") == 2
    assert "%a = hir.allocate {tagged} : !fusion.tensor<f32[4]>" in dumped


def test_print_ir_after_a_named_pass_only() -> None:
    @dataclass(frozen=True)
    class Nothing(ModulePass):
        name = "test-nothing"

        def apply(self, ctx: Context, op: ModuleOp) -> None:
            pass

    _, _, dumped = run([Nothing(), TagAllocations()], print_ir_after=frozenset({"test-nothing"}))
    assert dumped.count("IR Dump After") == 1
    assert "IR Dump After test-nothing" in dumped
    assert "tagged" not in dumped  # dumped before the tagging pass ran


def test_time_passes_writes_the_timing_report() -> None:
    _, result, dumped = run([TagAllocations()], time_passes=True)
    assert "Pass execution timing report" in dumped
    assert "test-tag-allocations" in dumped and "Total" in dumped
    assert result.timings[0].seconds >= 0


BROKEN = r"^program.mlir:1:1: error: 'hir.allgather' op team must not be empty$"


def test_the_module_is_verified_when_the_pipeline_ends() -> None:
    with pytest.raises(HostIRError, match=BROKEN):
        run([TagAllocations(), BreakTheIR()], verify_each=False)
    # without verification the broken IR goes through unnoticed
    module, _, _ = run([TagAllocations(), BreakTheIR()], verify=False, verify_each=False)
    assert any(isinstance(op, hir.AllgatherOp) for op in module.walk())


def test_verify_each_catches_the_pass_that_breaks_the_ir() -> None:
    # Verified only at the end, IR broken in between goes through (mlir-opt without
    # --verify-each); verified after each pass, the breaking pass is caught.
    module, result, _ = run([BreakTheIR(), RepairTheIR()], verify_each=False)
    assert [t.name for t in result.timings] == ["test-break-ir", "test-repair-ir", VERIFICATION]
    assert not any(isinstance(op, hir.AllgatherOp) for op in module.walk())
    with pytest.raises(HostIRError, match=BROKEN):
        run([BreakTheIR(), RepairTheIR()], verify_each=True)


def test_the_test_suite_verifies_after_each_pass(monkeypatch) -> None:
    assert PassManagerOptions().verify_each  # tests/conftest.py sets HOSTIR_VERIFY_EACH=1
    monkeypatch.setenv(VERIFY_EACH_VARIABLE, "0")
    assert not PassManagerOptions().verify_each
    monkeypatch.delenv(VERIFY_EACH_VARIABLE)
    assert not PassManagerOptions().verify_each


def test_time_passes_shows_the_verification_on_its_own_line() -> None:
    _, result, dumped = run([TagAllocations(), TagAllocations()], time_passes=True, verify_each=True)
    assert [t.name for t in result.timings] == ["test-tag-allocations", "test-tag-allocations", VERIFICATION]
    assert result.timings[-1].seconds > 0
    report = dumped.splitlines()
    assert [line for line in report if line.endswith(f"  {VERIFICATION}")], dumped
    _, unverified, _ = run([TagAllocations()], verify=False, verify_each=False)
    assert [t.name for t in unverified.timings] == ["test-tag-allocations"]


def test_pipelines_expand_to_their_passes() -> None:
    assert [s.name for s in expand_specs(parse_pipeline("hostir-lower"))] == list(PIPELINES["hostir-lower"])
    with pytest.raises(ValueError, match="unknown pass 'nope'; available: "):
        expand_specs(parse_pipeline("nope"))
