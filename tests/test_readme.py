"""README.md runs as written: every command, every code block.

- ```bash blocks: each command (a `\\`-continued line joined) exits 0. The two set-up
  commands are not run: they create virtual environments. What they run is checked
  instead: the demo (`python examples/demo.py`) is a case of the bad-input corpus
  (tests/bad_inputs/docs/demo_prints_once.mlir) and the test command is `.ci/run`'s, which
  is how CI runs the suite.
- ```console blocks: `$ command` lines, each followed by the output it prints; every shown
  line matches a line of the output, in order (`...` stands for any text). The command exits
  1 when its output shows an `error:`, else 0.
- ```python blocks run as scripts (`__main__`) from the checkout, print a fusion's IR at
  most once (the ranks they spawn re-import them) and warn of nothing.
- ```mlir blocks parse and verify: a module as written, or one tensor type per line.

`hostir-opt` and `hostir-run` run in this process (their console entry points, as the
bad-input corpus runs them: the ranks fork from a server started once), anything else in
a shell.
"""

from __future__ import annotations

import re
import shlex
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

from hostir.passes import opt
from hostir.runtime import cli
from hostir_dialect import parse_module

ROOT = Path(__file__).resolve().parents[1]
README = (ROOT / "README.md").read_text()
SET_UP = "python3 -m venv .venv && . .venv/bin/activate && pip install -q torch==2.13.0 && pip install -q -e '.[test]' && "


@dataclass
class Command:
    line: str
    output: list[str]
    """The lines the README shows it printing (console blocks)."""

    @property
    def expected_exit(self) -> int:
        return 1 if any("error:" in line for line in self.output) else 0


def blocks(language: str) -> list[str]:
    return re.findall(rf"^```{language}\n(.*?)^```", README, re.MULTILINE | re.DOTALL)


def bash_commands() -> list[str]:
    joined = [block.replace("\\\n", " ") for block in blocks("bash")]
    return [line.strip() for block in joined for line in block.splitlines() if line.strip()]


def console_commands() -> list[Command]:
    commands: list[Command] = []
    for block in blocks("console"):
        for line in block.splitlines():
            if line.startswith("$ "):
                commands.append(Command(line[2:], []))
            else:
                commands[-1].output.append(line)
    return commands


COMMANDS = [Command(c, []) for c in bash_commands() if not c.startswith(SET_UP)] + console_commands()


def run(command: str, capfd) -> tuple[int, str]:
    """Exit code and output (stdout, then stderr) of one README command."""
    words = shlex.split(command, comments=True)
    stdin = None
    if "<" in words:
        at = words.index("<")
        stdin, words = words[at + 1], words[:at] + words[at + 2:]
    if words[0] in ("hostir-opt", "hostir-run"):
        code = _in_process(words, stdin)
    else:
        code = subprocess.run(command, shell=True, cwd=ROOT).returncode
    out, err = capfd.readouterr()
    return code, out + err


def _in_process(words: list[str], stdin: str | None) -> int:
    saved = sys.stdin
    sys.stdin = open(ROOT / stdin) if stdin else saved  # noqa: SIM115 -- closed below
    try:
        if words[0] == "hostir-opt":
            return opt.main(words[1:])
        cli.console_main(words[1:])
        return 0
    except SystemExit as stop:
        return stop.code if isinstance(stop.code, int) else 1
    finally:
        if sys.stdin is not saved:
            sys.stdin.close()
            sys.stdin = saved


def test_the_readme_has_what_this_test_runs() -> None:
    assert len(blocks("bash")) >= 3 and console_commands() and blocks("python") and len(blocks("mlir")) >= 3
    assert sum(c.startswith(SET_UP) for c in bash_commands()) == 2


def test_the_set_up_commands_run_the_demo_and_what_ci_runs() -> None:
    demo, tests = (c.removeprefix(SET_UP) for c in bash_commands() if c.startswith(SET_UP))
    assert demo == "python examples/demo.py"
    assert f"RUN: {demo}" in (ROOT / "tests/bad_inputs/docs/demo_prints_once.mlir").read_text()
    assert (ROOT / ".ci/run").read_text().rstrip().endswith(SET_UP + tests)


@pytest.mark.parametrize("command", COMMANDS, ids=[c.line for c in COMMANDS])
def test_command(command: Command, capfd) -> None:
    code, output = run(command.line, capfd)
    assert code == command.expected_exit, output[-2000:]
    lines = iter(output.splitlines())
    for shown in command.output:
        pattern = re.compile(".*".join(map(re.escape, shown.split("..."))))
        assert any(pattern.fullmatch(line) for line in lines), f"no line matches {shown!r} in:\n{output}"


@pytest.mark.parametrize("index", range(len(blocks("python"))))
def test_python_block(index: int, tmp_path: Path) -> None:
    script = tmp_path / "readme_block.py"
    script.write_text(blocks("python")[index])
    result = subprocess.run([sys.executable, str(script)], cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert result.returncode == 0, result.stderr[-2000:]
    assert result.stdout.count("fusion.func") <= 1, result.stdout  # spawned ranks print nothing again
    assert "warn" not in result.stderr.lower(), result.stderr  # torch's numpy warning among others


def test_the_python_block_prints_its_ir() -> None:
    assert "print(fd)" in blocks("python")[0]


@pytest.mark.parametrize("index", range(len(blocks("mlir"))))
def test_mlir_block(index: int) -> None:
    text = blocks("mlir")[index]
    if text.startswith("!fusion.tensor"):  # one type per line, then what it means
        for line in text.splitlines():
            tensor_type = re.match(r"!fusion\.tensor<.*>", line)[0]
            parse_module(f"%a = hir.allocate : {tensor_type}")
    else:
        parse_module(text, f"README.md mlir block {index}")
