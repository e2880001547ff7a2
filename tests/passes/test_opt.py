"""hostir-opt (hostir.passes.opt): exit codes, messages, output options, the passes it registers,
and the pipeline options reaching passes registered by a subclass (the pipeline itself is
tested in test_pipeline.py)."""

from __future__ import annotations

import gc
import os
import shutil
import stat
import subprocess
import threading
from pathlib import Path

import pytest
from test_pipeline import PROGRAM, BreakTheIR, RepairTheIR, TagAllocations
from xdsl.dialects.builtin import IntegerAttr, i32
from xdsl.utils.exceptions import VerifyException

from hostir.passes import PIPELINES, get_all_passes, opt
from hostir.passes.pipeline import VERIFY_EACH_VARIABLE
from hostir_dialect.context import parse_module
from hostir_dialect.diagnostics import MAX_SOURCE_BYTES, HostIRError
from hostir_dialect.symbols import programs

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
FUSIONS, HOST_PROGRAMS = EXAMPLES / "fusions", EXAMPLES / "host_programs"

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
    for name in (*get_all_passes(), *opt.UPSTREAM_PASSES, *PIPELINES):
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


def test_console_main_collects_garbage_rarely_and_restores_the_collector(monkeypatch) -> None:
    """The command runs with rare collections (no full one on large inputs) and leaves
    the collector as it found it; a caller of `main` keeps its own settings throughout."""
    thresholds = gc.get_threshold()
    assert thresholds[0] < 10_000 and gc.get_freeze_count() == 0
    during = []
    monkeypatch.setattr(opt, "main", lambda: during.append((gc.get_threshold()[0], gc.get_freeze_count())) or 0)
    with pytest.raises(SystemExit):
        opt.console_main()
    assert during[0][0] == 10_000 and during[0][1] > 0
    assert gc.get_threshold() == thresholds and gc.get_freeze_count() == 0


# --------------------------------------------------------------------------- #
# Passes registered by a subclass (test_pipeline.py defines them)
# --------------------------------------------------------------------------- #


class OptWithTestPasses(opt.HostIROptMain):
    """hostir-opt that also knows the passes of test_pipeline.py, registered as xDSL
    registers passes (register_pass), not by patching globals."""

    def register_all_passes(self) -> None:
        super().register_all_passes()
        for cls in (TagAllocations, BreakTheIR, RepairTheIR):
            self.register_pass(cls.name, lambda cls=cls: cls)


def run_opt_with_test_passes(capsys, *args: str) -> tuple[int, str, str]:
    code = opt.main(list(args), tool=OptWithTestPasses)
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def test_cli_runs_passes_and_prints_ir_after_them(capsys, write) -> None:
    code, out, err = run_opt_with_test_passes(capsys, write(PROGRAM), "-p", "test-tag-allocations", "--print-ir-after-all", "--time-passes")
    assert code == 0
    assert "%a = hir.allocate {tagged} : !fusion.tensor<f32[4]>" in out
    assert "// -----// IR Dump After test-tag-allocations //----- //" in err
    assert "Pass execution timing report" in err


def test_cli_disable_pass_and_print_ir_after_by_name(capsys, write) -> None:
    code, out, err = run_opt_with_test_passes(
        capsys, write(PROGRAM), "-p", "test-tag-allocations,test-break-ir",
        "--disable-pass", "test-break-ir", "--print-ir-after", "test-tag-allocations",
    )
    assert code == 0
    assert "tagged" in out and "hir.allgather" not in out
    assert err.count("IR Dump After") == 1


def test_cli_reports_a_pass_that_breaks_the_ir(capsys, write) -> None:
    path = write(PROGRAM)
    code, out, err = run_opt_with_test_passes(capsys, path, "-p", "test-break-ir")
    assert (code, out) == (1, "")
    assert err == f"{path}:1:1: error: 'hir.allgather' op team must not be empty\n"


def test_cli_verifies_after_the_pipeline_unless_told_to_verify_each(capsys, write, monkeypatch) -> None:
    monkeypatch.delenv(VERIFY_EACH_VARIABLE, raising=False)
    path = write(PROGRAM)
    code, out, err = run_opt_with_test_passes(capsys, path, "-p", "test-break-ir,test-repair-ir", "--time-passes")
    assert code == 0 and "hir.allgather" not in out
    assert "  verification\n" in err
    code, out, err = run_opt_with_test_passes(capsys, path, "-p", "test-break-ir,test-repair-ir", "--verify-each")
    assert (code, out) == (1, "")
    assert err == f"{path}:1:1: error: 'hir.allgather' op team must not be empty\n"
    monkeypatch.setenv(VERIFY_EACH_VARIABLE, "1")  # what the test suites set
    assert run_opt_with_test_passes(capsys, path, "-p", "test-break-ir,test-repair-ir")[0] == 1
    assert run_opt_with_test_passes(capsys, path, "-p", "test-break-ir,test-repair-ir", "--disable-verify")[0] == 0
    with pytest.raises(VerifyException, match="out of range"):  # the process verifies attributes again
        IntegerAttr(2**40, i32)


# --------------------------------------------------------------------------- #
# examples/{fusions,host_programs}/*.mlir: sorted by kind, round-trip to identical text
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


@pytest.mark.parametrize("example", sorted(EXAMPLES.glob("*/*.mlir")), ids=lambda p: p.name)
def test_example_round_trips_to_identical_text(capsys, example: Path) -> None:
    code, out, err = run_opt(capsys, str(example))
    assert (code, err) == (0, "")
    assert out.rstrip("\n") + "\n" == without_comments(example.read_text())


def test_examples_are_sorted_into_fusions_and_host_programs() -> None:
    assert sorted(p.name for p in EXAMPLES.glob("*.mlir")) == []
    assert sorted(p.stem for p in FUSIONS.glob("*.mlir")) == sorted(NVFUSER_SEEDS)
    for example in HOST_PROGRAMS.glob("*.mlir"):
        assert programs(parse_module(example.read_text(), example.name)), example.name


@pytest.mark.parametrize("name", NVFUSER_SEEDS)
def test_nvfuser_seed_is_one_fusion_func(name: str) -> None:
    module = parse_module((FUSIONS / f"{name}.mlir").read_text(), name)
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


def test_an_endless_input_is_refused_at_the_bound(capsys) -> None:
    # Regression (issue 31, defect 7): /dev/zero was read until a MemoryError.
    message = f"error: input is larger than {MAX_SOURCE_BYTES >> 20} MiB\n"
    assert run_opt(capsys, "/dev/zero") == (1, "", f"/dev/zero:1:1: {message}")


def test_output_dash_is_standard_output(capsys, write, tmp_path: Path, monkeypatch) -> None:
    monkeypatch.chdir(tmp_path)
    assert run_opt(capsys, write(GOOD), "-o", "-") == (0, PRINTED + "\n", "")
    assert not (tmp_path / "-").exists()


def test_output_to_dev_null_leaves_it_a_device(capsys, write) -> None:
    # Regression (issue 31, defect 3): -o /dev/null replaced the device by a regular file
    # (as root, for the whole machine).
    assert run_opt(capsys, write(GOOD), "-o", "/dev/null") == (0, "", "")
    assert stat.S_ISCHR(os.stat("/dev/null").st_mode)
    assert stat.S_ISCHR(os.lstat("/dev/null").st_mode)


def test_output_to_a_fifo_is_written_through(capsys, write, tmp_path: Path) -> None:
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    received: list[str] = []
    reader = threading.Thread(target=lambda: received.append(fifo.read_text()), daemon=True)
    reader.start()
    assert run_opt(capsys, write(GOOD), "-o", str(fifo)) == (0, "", "")
    reader.join(timeout=30)
    assert received == [PRINTED + "\n"]
    assert stat.S_ISFIFO(fifo.lstat().st_mode)


def test_output_to_a_symbolic_link_writes_its_target(capsys, write, tmp_path: Path) -> None:
    target, link = tmp_path / "target.mlir", tmp_path / "link.mlir"
    target.write_text("previous contents\n")
    link.symlink_to(target)
    assert run_opt(capsys, write(GOOD), "-o", str(link)) == (0, "", "")
    assert link.is_symlink() and link.readlink() == target
    assert target.read_text() == PRINTED + "\n"


def test_a_replaced_output_file_keeps_its_mode(capsys, write, tmp_path: Path) -> None:
    target = tmp_path / "out.mlir"
    target.write_text("previous contents\n")
    target.chmod(0o654)
    assert run_opt(capsys, write(GOOD), "-o", str(target)) == (0, "", "")
    assert target.read_text() == PRINTED + "\n"
    assert stat.S_IMODE(target.stat().st_mode) == 0o654


def test_a_new_output_file_gets_the_umasks_mode(capsys, write, tmp_path: Path) -> None:
    target = tmp_path / "out.mlir"
    previous = os.umask(0o027)
    try:
        assert run_opt(capsys, write(GOOD), "-o", str(target)) == (0, "", "")
    finally:
        os.umask(previous)
    assert stat.S_IMODE(target.stat().st_mode) == 0o640


# --------------------------------------------------------------------------- #
# xDSL's canonicalize, cse and dce on lowered programs
# --------------------------------------------------------------------------- #

SINGLE_RANK_SEEDS = [
    "single_set_op", "two_set_ops", "three_set_ops_with_disjoint_for_loops", "single_binary_op",
    "reduction", "matmul_m", "batched_matmul", "matmul_n",
]


@pytest.mark.parametrize("name", SINGLE_RANK_SEEDS)
def test_upstream_cleanup_of_a_lowered_program_computes_the_same(name: str) -> None:
    """canonicalize,cse,dce after hostir-lower keep every host effect (lit:
    passes/opt/upstream_passes.mlir) and so the program's result."""
    import torch

    from hostir import runtime
    from hostir.passes import lower
    from hostir.passes.pipeline import build_pipeline
    from hostir_dialect.context import make_context

    source = parse_module((FUSIONS / f"{name}.mlir").read_text(), name)
    host = lower(source.clone())
    build_pipeline("canonicalize,cse,dce", available=opt.registered_passes()).apply(make_context(), host)
    generator = torch.Generator().manual_seed(0)
    inputs = [torch.randn(a.type.value_shape(), generator=generator) for a in source.body.block.first_op.args]
    (expected,) = runtime.run_fusion(source, inputs)
    (got,) = runtime.execute(host, inputs, rank=0, world_size=1)
    torch.testing.assert_close(got, expected)
