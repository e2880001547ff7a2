"""hostir-opt (passes.opt) and the pass manager it drives: exit codes, messages, output
options, and the mechanism later passes plug into (disable, dump IR after, timing, verify)."""

from __future__ import annotations

import io
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

import pytest
from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp, UnitAttr
from xdsl.passes import ModulePass
from xdsl.utils.arg_spec import parse_pipeline

from hostir_dialect import hir
from hostir_dialect.context import make_context, parse_module
from hostir_dialect.diagnostics import HostIRError
from passes import opt, pass_manager
from passes.pass_manager import ALL, PassManagerOptions, expand_specs, run_passes
from passes.registry import PASS_NAMES, PIPELINES

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"

GOOD = "%a = hir.allocate : !fusion.tensor<f32[8 stream, 64]>\n"
PRINTED = "builtin.module {\n  %a = hir.allocate : !fusion.tensor<f32[8 stream, 64]>\n}\n"
SYNTAX_ERROR = "%a = hir.allocate : !fusion.tensor<f32[8, 4>\n"
INVALID = (
    "fusion.func @f(%a: !fusion.tensor<f32[8]>) {\n"
    "  %b = fusion.exp %a : !fusion.tensor<f32[8]> -> !fusion.tensor<f32[4]>\n"
    "  fusion.return\n"
    "}\n"
)


@pytest.fixture
def write(tmp_path: Path):
    def write(text: str, name: str = "input.mlir") -> str:
        path = tmp_path / name
        path.write_text(text)
        return str(path)

    return write


def run_opt(capsys, *args: str) -> tuple[int, str, str]:
    code = opt.main(list(args))
    captured = capsys.readouterr()
    return code, captured.out, captured.err


# --------------------------------------------------------------------------- #
# Exit codes and diagnostics
# --------------------------------------------------------------------------- #


def test_valid_input_is_printed_with_exit_code_0(capsys, write) -> None:
    assert run_opt(capsys, write(GOOD)) == (0, PRINTED + "\n", "")


def test_parse_error_is_one_located_diagnostic_with_exit_code_1(capsys, write) -> None:
    path = write(SYNTAX_ERROR)
    code, out, err = run_opt(capsys, path)
    assert code == 1
    assert out == ""
    assert err.splitlines()[0] == f"{path}:1:44: error: ']' expected"
    assert err.splitlines()[1] == SYNTAX_ERROR.rstrip()  # the source line, then a caret
    assert err.splitlines()[2].strip() == "^"
    assert "Traceback" not in err


def test_verifier_error_is_one_located_line_with_exit_code_1(capsys, write) -> None:
    path = write(INVALID)
    code, out, err = run_opt(capsys, path)
    assert (code, out) == (1, "")
    assert err == f"{path}:2:3: error: 'fusion.exp' op result axes [4] do not match the expected [8]\n"


def test_missing_input_file_is_a_one_line_error(capsys, tmp_path: Path) -> None:
    missing = str(tmp_path / "nothing.mlir")
    assert run_opt(capsys, missing) == (1, "", f"error: No such file or directory: {missing}\n")


def test_unknown_pass_lists_the_available_passes(capsys, write) -> None:
    code, out, err = run_opt(capsys, write(GOOD), "-p", "no-such-pass")
    assert (code, out) == (1, "")
    assert err.startswith("error: unknown pass 'no-such-pass'; available: ")
    assert len(err.splitlines()) == 1
    for name in (*PASS_NAMES, *PIPELINES):
        assert name in err


def test_debug_shows_the_python_exception(write) -> None:
    with pytest.raises(HostIRError, match="'fusion.exp' op result axes"):
        opt.main([write(INVALID), "--debug"])


# --------------------------------------------------------------------------- #
# Output options
# --------------------------------------------------------------------------- #


def test_output_file(capsys, write, tmp_path: Path) -> None:
    target = tmp_path / "out.mlir"
    assert run_opt(capsys, write(GOOD), "-o", str(target)) == (0, "", "")
    assert target.read_text() == PRINTED + "\n"


def test_split_input_file(capsys, write) -> None:
    text = GOOD + "// -----\n%b = hir.allocate : !fusion.tensor<f32[2]>\n"
    code, out, _ = run_opt(capsys, write(text), "--split-input-file")
    assert code == 0
    first, second = out.split("// -----\n")
    assert first == PRINTED + "\n"
    assert second == "builtin.module {\n  %b = hir.allocate : !fusion.tensor<f32[2]>\n}\n\n"


def test_split_input_file_locates_errors_in_the_whole_file(capsys, write) -> None:
    path = write(GOOD + "// -----\n\n" + INVALID)
    code, _, err = run_opt(capsys, path, "--split-input-file")
    assert code == 1
    assert err.startswith(f"{path}:5:3: error: 'fusion.exp' op")


def test_print_op_generic(capsys, write) -> None:
    code, out, _ = run_opt(capsys, write(GOOD), "--print-op-generic")
    assert code == 0
    assert '%a = "hir.allocate"() : () -> !fusion.tensor<f32[8 stream, 64]>' in out
    # and the generic form reads back to the same module
    assert run_opt(capsys, write(out, "generic.mlir")) == (0, PRINTED + "\n", "")


def test_verify_diagnostics_reports_on_stdout_with_exit_code_0(capsys, write) -> None:
    path = write(GOOD + "// -----\n" + INVALID)
    code, out, err = run_opt(capsys, path, "--split-input-file", "--verify-diagnostics")
    assert (code, err) == (0, "")
    assert out.startswith(PRINTED)
    assert f"{path}:4:3: error: 'fusion.exp' op result axes [4] do not match the expected [8]" in out


def test_console_script(tmp_path: Path) -> None:
    """The installed `hostir-opt` entry point: same behaviour in a fresh process."""
    script = shutil.which("hostir-opt")
    assert script is not None, "hostir-opt is not installed (pip install -e '.[test]')"
    good, bad = tmp_path / "good.mlir", tmp_path / "bad.mlir"
    good.write_text(GOOD)
    bad.write_text(SYNTAX_ERROR)
    ok = subprocess.run([script, str(good)], capture_output=True, text=True, timeout=120)
    assert (ok.returncode, ok.stdout) == (0, PRINTED + "\n")
    failed = subprocess.run([script, str(bad)], capture_output=True, text=True, timeout=120)
    assert failed.returncode == 1
    assert failed.stderr.startswith(f"{bad}:1:44: error: ']' expected")
    assert "Traceback" not in failed.stderr


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


PROGRAM = """hir.program @main() {
  %a = hir.allocate : !fusion.tensor<f32[4]>
  hir.return
}
"""


def run(passes: list[ModulePass], **options) -> tuple[ModuleOp, pass_manager.PassRun, str]:
    module = parse_module(PROGRAM, "program.mlir")
    stream = io.StringIO()
    result = run_passes(make_context(), module, passes, PassManagerOptions(dump_stream=stream, **options))
    return module, result, stream.getvalue()


def tagged(module: ModuleOp) -> bool:
    return any("tagged" in op.attributes for op in module.walk())


def test_passes_run_in_order_and_are_timed() -> None:
    module, result, dumped = run([TagAllocations()])
    assert tagged(module)
    assert [t.name for t in result.timings] == ["test-tag-allocations"]
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


def test_verification_after_each_pass_catches_a_pass_that_breaks_the_ir() -> None:
    with pytest.raises(HostIRError, match=r"^program.mlir:1:1: error: 'hir.allgather' op team must not be empty$"):
        run([BreakTheIR()])
    # without verification the broken IR goes through unnoticed
    module, _, _ = run([BreakTheIR()], verify_each=False)
    assert any(isinstance(op, hir.AllgatherOp) for op in module.walk())


def test_pipelines_expand_to_their_passes() -> None:
    assert [s.name for s in expand_specs(parse_pipeline("hostir-lower"))] == list(PIPELINES["hostir-lower"])
    with pytest.raises(ValueError, match="unknown pass 'nope'; available: "):
        expand_specs(parse_pipeline("nope"))


@pytest.fixture
def test_passes_registered(monkeypatch):
    """Make hostir-opt's `-p` know the passes defined in this file."""
    extra = {cls.name: cls for cls in (TagAllocations, BreakTheIR)}
    monkeypatch.setattr(pass_manager, "PASS_NAMES", (*PASS_NAMES, *extra))
    real = pass_manager.pass_class
    monkeypatch.setattr(pass_manager, "pass_class", lambda name: extra.get(name) or real(name))


@pytest.mark.usefixtures("test_passes_registered")
def test_cli_runs_passes_and_prints_ir_after_them(capsys, write) -> None:
    code, out, err = run_opt(capsys, write(PROGRAM), "-p", "test-tag-allocations", "--print-ir-after-all", "--time-passes")
    assert code == 0
    assert "%a = hir.allocate {tagged} : !fusion.tensor<f32[4]>" in out
    assert "// -----// IR Dump After test-tag-allocations //----- //" in err
    assert "Pass execution timing report" in err


@pytest.mark.usefixtures("test_passes_registered")
def test_cli_disable_pass_and_print_ir_after_by_name(capsys, write) -> None:
    code, out, err = run_opt(
        capsys, write(PROGRAM), "-p", "test-tag-allocations,test-break-ir",
        "--disable-pass", "test-break-ir", "--print-ir-after", "test-tag-allocations",
    )
    assert code == 0
    assert "tagged" in out and "hir.allgather" not in out
    assert err.count("IR Dump After") == 1


@pytest.mark.usefixtures("test_passes_registered")
def test_cli_reports_a_pass_that_breaks_the_ir(capsys, write) -> None:
    path = write(PROGRAM)
    code, out, err = run_opt(capsys, path, "-p", "test-break-ir")
    assert (code, out) == (1, "")
    assert err == f"{path}:1:1: error: 'hir.allgather' op team must not be empty\n"


# --------------------------------------------------------------------------- #
# examples/*.mlir round-trip to identical text
# --------------------------------------------------------------------------- #

NVFUSER_SEEDS = [
    "single_set_op", "two_set_ops", "three_set_ops_with_disjoint_for_loops",
    "single_binary_op", "reduction", "matmul_m", "batched_matmul", "matmul_n",
    "allgather", "allreduce", "reduce_scatter", "ag_matmul", "matmul_ar", "matmul_rs_through_bcast",
]


def without_comments(text: str) -> str:
    """The IR of a file: comment lines and the blank lines that follow the header dropped."""
    lines = [line for line in text.splitlines() if not line.lstrip().startswith("//")]
    return "\n".join(lines).strip("\n") + "\n"


@pytest.mark.parametrize("example", sorted(EXAMPLES.glob("*.mlir")), ids=lambda p: p.name)
def test_example_round_trips_to_identical_text(capsys, example: Path) -> None:
    code, out, err = run_opt(capsys, str(example))
    assert (code, err) == (0, "")
    assert out.rstrip("\n") + "\n" == without_comments(example.read_text())


@pytest.mark.parametrize("name", NVFUSER_SEEDS)
def test_nvfuser_seed_is_one_fusion_func(name: str) -> None:
    module = parse_module((EXAMPLES / f"{name}.mlir").read_text(), name)
    ops = list(module.ops)
    assert [op.name for op in ops] == ["fusion.func"]
    assert ops[0].sym_name.data == name  # type: ignore[attr-defined]


def test_output_file_may_be_the_input_file(capsys, write) -> None:
    # Regression (issue 13, defect 2): `-o X` truncated X before it was read.
    path = write(GOOD)
    assert run_opt(capsys, path, "-o", path)[0] == 0
    assert Path(path).read_text() == PRINTED + "\n"


def test_a_failed_run_leaves_the_output_file_untouched(capsys, write, tmp_path: Path) -> None:
    target = tmp_path / "out.mlir"
    target.write_text("previous contents\n")
    assert run_opt(capsys, write(SYNTAX_ERROR), "-o", str(target))[0] == 1
    assert target.read_text() == "previous contents\n"
    assert [p.name for p in tmp_path.iterdir() if p.name.endswith(".tmp")] == []
