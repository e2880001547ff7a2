"""Run the bad-input corpus: every case, its expected outcome, the actual one, a table.

    python -m tests.bad_inputs.run_corpus [-j 2] [--timeout 60] [--json out.json] [--corpus DIR] [PATTERN ...]

A case is one file under tests/bad_inputs/ (see README.md there): a `.mlir` file with a
`RUN:` line (hostir-opt, hostir-run or any command) and `EXPECT-*` directives, or a `.py`
file of Python API calls with an `EXPECT-RAISES:` directive. hostir-opt and hostir-run
cases and API cases run in-process inside worker processes (torch and xDSL are imported
once per worker; fds 0/1/2 are redirected per case, so spawned ranks are captured too);
other commands, and cases with `LIMITS`, run as subprocesses. A case that outlives its
timeout is a hang: its worker is killed (with its process group) and restarted.
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import functools
import hashlib
import json
import math
import os
import re
import resource
import select
import shlex
import signal
import subprocess
import sys
import tempfile
import threading
import time
import traceback
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
CORPUS = Path(__file__).resolve().parent
DEFAULT_TIMEOUT = 60.0

OUTCOMES = {
    "ok": "meets its expectation",
    "other-message": "diagnosed, but not with the expected message",
    "wrong-location": "located in the user's file, but not at the offending op/token",
    "unlocated": "one-line error without the expected file:line:col",
    "in-generated": "error located in a generated program (<job>, <string>), not the user's file",
    "wrong-exit": "the expected message, but the wrong exit code",
    "traceback": "a Python traceback (internal error escaped)",
    "hang": "did not finish within the timeout",
    "exit0-garbage": "exit 0 / no exception where an error was due, or a wrong or meaningless result",
    "wrongly-rejected": "valid input (or a documented use) refused",
    "data-loss": "a file that had to survive was changed or removed",
    "over-limit": "used more CPU time or memory than its LIMITS",
    "skipped": "cannot be tested here",
}
USER_ERRORS = {"FusionDefinitionError", "InputError", "ExecutionError", "SpmdError", "HostIRError",
               "VerifyException", "DiagnosticException", "ParseError", "UsageError"}
"""Exception classes that are deliberate, user-facing refusals (anything else is a crash)."""
LOCATION = re.compile(r"(?P<file>[^\s:]+|<[^>]+>):(?P<line>\d+):(?P<col>\d+): error: ")
DIRECTIVE = re.compile(r"^\s*(?://|#)\s*(?P<key>RUN|SETUP|KEEP|TIMEOUT|LIMITS|EXPECT-[A-Z-]+)(?P<at>@[+-]?\d+:\d+)?:\s?(?P<value>.*)$")
LIMITS = re.compile(r"^(?P<seconds>\d+(\.\d+)?) s, (?P<size>\d+) (?P<unit>MB|GB)$")


# --------------------------------------------------------------------------- #
# Cases
# --------------------------------------------------------------------------- #


@dataclass
class Case:
    path: str
    """Relative to the repository root (the name the tools see)."""
    run: str | None = None
    setup: list[tuple[str, str]] = field(default_factory=list)
    keep: list[str] = field(default_factory=list)
    timeout: float | None = None
    error: str | None = None
    """Regex the diagnostic line must match (search); None: no error expected."""
    at: tuple[int, int] | None = None
    exit: int | None = None
    stdout: list[str] = field(default_factory=list)
    stderr: list[str] = field(default_factory=list)
    not_stdout: list[str] = field(default_factory=list)
    not_stderr: list[str] = field(default_factory=list)
    file: str | None = None
    """The file the diagnostic must be located in (default: the case file itself)."""
    raises: tuple[str, str] | None = None
    """API cases: (exception class names separated by |, message regex)."""
    skip_as_root: bool = False
    limits: tuple[float, int] | None = None
    """CPU seconds and bytes of address space the command may use (`LIMITS: 10 s, 1 GB`)."""

    @property
    def is_api(self) -> bool:
        return self.path.endswith(".py")

    @property
    def expected_exit(self) -> int:
        return self.exit if self.exit is not None else (1 if self.error is not None else 0)

    def argv(self, tmp: str) -> tuple[list[str], str | None]:
        """The command (substituted) and the file its stdin comes from."""
        text = (self.run or "").replace("%s", self.path).replace("%t", tmp)
        text = text.replace("%inputs", "tests/bad_inputs/inputs")
        text = text.replace("%examples", "examples")
        words = shlex.split(text)
        stdin = None
        if "<" in words:
            at = words.index("<")
            stdin, words = words[at + 1], words[:at] + words[at + 2:]
        return words, stdin

    @property
    def in_process(self) -> bool:
        if self.limits is not None:
            return False
        return self.is_api or (self.run or "").split()[0] in ("hostir-opt", "hostir-run")


def load_case(path: Path) -> Case:
    case = Case(str(path.relative_to(ROOT)))
    for number, line in enumerate(path.read_text(errors="replace").splitlines(), start=1):
        match = DIRECTIVE.match(line)
        if not match:
            continue
        key, value = match["key"], match["value"].strip()
        if key == "RUN":
            case.run = value
        elif key == "SETUP":
            name, _, expression = value.partition("=")
            case.setup.append((name.strip(), expression.strip()))
        elif key == "KEEP":
            case.keep.append(value)
        elif key == "TIMEOUT":
            case.timeout = float(value)
        elif key == "LIMITS":
            limits = LIMITS.match(value)
            if limits is None:
                raise ValueError(f"{case.path}:{number}: LIMITS takes `SECONDS s, SIZE MB|GB`, got {value!r}")
            case.limits = (float(limits["seconds"]), int(limits["size"]) << (20 if limits["unit"] == "MB" else 30))
        elif key == "EXPECT-ERROR":
            case.error = value
            if match["at"]:
                line_text, col = match["at"][1:].split(":")
                row = int(line_text) + (number if line_text[0] in "+-" else 0)
                case.at = (row, int(col))
        elif key == "EXPECT-FILE":
            case.file = value
        elif key == "EXPECT-EXIT":
            case.exit = int(value)
        elif key == "EXPECT-RAISES":
            name, _, regex = value.partition(":")
            case.raises = (name.strip(), regex.strip())
        elif key == "EXPECT-SKIP-AS-ROOT":
            case.skip_as_root = True
        else:
            attribute = key.removeprefix("EXPECT-").lower().replace("-", "_")
            getattr(case, attribute).append(value)
    if not case.is_api and case.run is None:
        raise ValueError(f"{case.path}: no RUN line")
    return case


def all_cases(patterns: list[str] | None = None, corpus: Path = CORPUS) -> list[Case]:
    """The cases under `corpus` (this directory, or another one of cases in this format)."""
    paths = sorted(p for p in corpus.rglob("*") if p.suffix in (".mlir", ".py") and p.parent != CORPUS
                   and "inputs" not in p.relative_to(corpus).parts)
    cases = [load_case(p) for p in paths]
    if patterns:
        cases = [c for c in cases if any(re.search(p, c.path) for p in patterns)]
    return cases


# --------------------------------------------------------------------------- #
# Worker: runs cases in-process, one at a time (python -m tests.bad_inputs.run_corpus --worker)
# --------------------------------------------------------------------------- #


def _setup(case: Case, tmp: str) -> None:
    import torch  # noqa: F401 -- SETUP expressions may build tensors

    for name, expression in case.setup:
        target = Path(name.replace("%t", tmp))
        if expression.startswith("chmod "):
            target.chmod(int(expression.split()[1], 8))
            continue
        value = eval(expression, {"torch": torch})  # noqa: S307 -- corpus files are ours
        if isinstance(value, str):
            target.write_text(value)
        elif isinstance(value, bytes):
            target.write_bytes(value)
        else:
            torch.save(value, target)


def _run_in_process(case: Case, tmp: str) -> dict:
    words, stdin_path = case.argv(tmp)
    result: dict = {"exit": 0}
    sys.argv = words or [case.path]  # argparse names the program after argv[0]
    try:
        if case.is_api:
            source = Path(case.path).read_text()
            exec(compile(source, case.path, "exec"), {"__name__": "__corpus__", "__file__": case.path})  # noqa: S102
        elif words[0] == "hostir-opt":
            from hostir.passes import opt

            sys.stdin = open(stdin_path or os.devnull)  # noqa: SIM115
            result["exit"] = opt.main(words[1:])
        else:
            from hostir.runtime import cli

            cli.console_main(words[1:])
    except SystemExit as stop:
        code = stop.code
        result["exit"] = code if isinstance(code, int) else (0 if code is None else 1)
    except BaseException as error:  # noqa: BLE001 -- what escapes is the finding
        result.update(exit=1, exception=[c.__name__ for c in type(error).__mro__],
                      message=str(error).strip().splitlines()[0] if str(error).strip() else "", where=_where(error))
        traceback.print_exc()
    return result


def _where(error: BaseException) -> str:
    """The innermost frame of hostir's own code (else the innermost) that the exception passed."""
    frames = traceback.extract_tb(error.__traceback__)
    ours = [f for f in frames if f.filename.startswith(str(ROOT)) and "bad_inputs" not in f.filename
            and "site-packages" not in f.filename]
    frame = (ours or frames)[-1]
    name = Path(frame.filename).relative_to(ROOT) if frame.filename.startswith(str(ROOT)) else frame.filename
    return f"{name}:{frame.lineno} in {frame.name}"


def worker() -> None:
    from xdsl.ir import Attribute
    from xdsl.utils.diagnostic import Diagnostic

    from hostir import runtime  # noqa: F401 -- loaded once, before the requests

    requests = os.fdopen(os.dup(0), "r")
    replies = os.fdopen(os.dup(1), "w")
    post_init, colored = Attribute.__post_init__, Diagnostic.colored
    for line in requests:
        request = json.loads(line)
        case, tmp = load_case(ROOT / request["case"]), request["tmp"]
        saved = [os.dup(fd) for fd in (0, 1, 2)]
        try:
            _setup(case, tmp)
            reply: dict = {"exit": None}
            kept = {name: _digest(Path(name.replace("%t", tmp))) for name in case.keep}
            if request["run"]:
                with open(os.devnull) as null, open(request["out"], "w") as out, open(request["err"], "w") as err:
                    for fd, target in ((0, null), (1, out), (2, err)):
                        os.dup2(target.fileno(), fd)
                    start = time.perf_counter()
                    reply = _run_in_process(case, tmp)
                    reply["seconds"] = time.perf_counter() - start
                    sys.stdout.flush()
                    sys.stderr.flush()
        except BaseException as error:  # noqa: BLE001 -- a broken SETUP is the corpus's bug
            reply, kept = {"exit": None, "setup_error": f"{type(error).__name__}: {error}"}, {}
        finally:
            for fd, copy in zip((0, 1, 2), saved):
                os.dup2(copy, fd)
                os.close(copy)
            if sys.stdin is not sys.__stdin__:
                sys.stdin.close()
                sys.stdin = sys.__stdin__
            Attribute.__post_init__, Diagnostic.colored = post_init, colored  # --disable-verify patches these
        reply["kept"] = kept
        replies.write(json.dumps(reply) + "\n")
        replies.flush()


# --------------------------------------------------------------------------- #
# Driver
# --------------------------------------------------------------------------- #


class Worker:
    def __init__(self) -> None:
        self.process: subprocess.Popen | None = None

    def ask(self, request: dict, timeout: float) -> dict | None:
        """The worker's reply, or None if it did not come within `timeout` (the worker is killed)."""
        if self.process is None or self.process.poll() is not None:
            self.process = subprocess.Popen([sys.executable, "-m", "tests.bad_inputs.run_corpus", "--worker"],
                                            cwd=ROOT, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                            text=True, start_new_session=True, env=_env())
        assert self.process.stdin and self.process.stdout
        self.process.stdin.write(json.dumps(request) + "\n")
        self.process.stdin.flush()
        ready, _, _ = select.select([self.process.stdout], [], [], timeout)
        line = self.process.stdout.readline() if ready else ""
        if not line:
            self.stop()
            return None
        return json.loads(line)

    def stop(self) -> None:
        if self.process is not None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(self.process.pid, signal.SIGKILL)  # the worker and the ranks it spawned
            self.process.wait()
        self.process = None


def _env() -> dict:
    env = dict(os.environ, PYTHONPATH=str(ROOT), PYTHONUNBUFFERED="1")
    for name in ("RANK", "WORLD_SIZE", "LOCAL_RANK", "MASTER_ADDR", "MASTER_PORT"):
        env.pop(name, None)  # a torchrun environment would make hostir-run join it
    return env


@dataclass
class Result:
    case: Case
    outcome: str
    detail: str
    exit: int | None
    seconds: float
    stdout: str = ""
    stderr: str = ""
    where: str | None = None


def _digest(path: Path) -> str | None:
    return hashlib.sha256(path.read_bytes()).hexdigest() if path.exists() else None


def run_case(case: Case, worker: Worker, timeout: float) -> Result:
    if case.skip_as_root and os.geteuid() == 0:
        return Result(case, "skipped", "running as root: file permissions are not enforced", None, 0.0)
    limit = case.timeout or timeout
    with tempfile.TemporaryDirectory(prefix="bad-input-") as tmp:
        out, err = Path(tmp) / ".stdout", Path(tmp) / ".stderr"
        request = {"case": case.path, "tmp": tmp, "out": str(out), "err": str(err), "run": case.in_process}
        start = time.perf_counter()
        reply = worker.ask(request, limit)
        if reply is not None and "setup_error" in reply:
            return Result(case, "skipped", f"corpus SETUP failed: {reply['setup_error']}", None, 0.0)
        kept = reply["kept"] if reply is not None else {}
        if reply is not None and not case.in_process:
            reply = _run_subprocess(case, tmp, out, err, limit - (time.perf_counter() - start))
        elapsed = time.perf_counter() - start
        lost = [name for name, digest in kept.items() if _digest(Path(name.replace("%t", tmp))) != digest]
        stdout = out.read_text(errors="replace") if out.exists() else ""
        stderr = err.read_text(errors="replace") if err.exists() else ""
    if reply is None:
        return Result(case, "hang", f"no result after {limit:.0f} s; last stderr: {_tail(stderr)}", None, elapsed,
                      stdout, stderr)
    outcome, detail = classify(case, reply, stdout, stderr, tmp)
    if lost:
        outcome, detail = "data-loss", f"{', '.join(lost)} changed or removed; " + detail
    return Result(case, outcome, detail, reply.get("exit"), elapsed, stdout, stderr, reply.get("where"))


def _run_subprocess(case: Case, tmp: str, out: Path, err: Path, limit: float) -> dict | None:
    words, stdin_path = case.argv(tmp)
    if words[0] == "python":
        words[0] = sys.executable
    elif words[0] in ("hostir-opt", "hostir-run"):  # this Python's, even where its bin/ is not on PATH
        words[0] = str(Path(sys.executable).with_name(words[0]))
    limits = None if case.limits is None else functools.partial(_limit, *case.limits)
    with open(stdin_path or os.devnull) as stdin, open(out, "w") as stdout, open(err, "w") as stderr:
        process = subprocess.Popen(words, cwd=ROOT, stdin=stdin, stdout=stdout, stderr=stderr, env=_env(),
                                   start_new_session=True, preexec_fn=limits)
        try:
            return {"exit": process.wait(timeout=max(limit, 1))}
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait()
            return None


def _limit(seconds: float, size: int) -> None:
    """In the child, before it runs the command: the kernel stops it at `seconds` of CPU
    time (SIGXCPU) and refuses it more than `size` bytes of address space (MemoryError)."""
    resource.setrlimit(resource.RLIMIT_CPU, (math.ceil(seconds), math.ceil(seconds) + 1))  # then SIGKILL
    resource.setrlimit(resource.RLIMIT_AS, (size, size))


def _over_limit(case: Case, reply: dict, stderr: str) -> str | None:
    """Which of its LIMITS a case went over, if any."""
    if case.limits is None:
        return None
    if reply["exit"] in (-signal.SIGXCPU, -signal.SIGKILL):
        return f"over {case.limits[0]:g} s of CPU time"
    if re.search(r"MemoryError|[Cc]an(no|')t allocate memory|std::bad_alloc", stderr):
        return f"over {case.limits[1] >> 20} MiB of memory: {_tail(stderr)}"
    return None


def _tail(text: str, lines: int = 1) -> str:
    kept = [line for line in text.strip().splitlines() if line.strip()]
    return " | ".join(kept[-lines:])[:300] or "(nothing)"


def _diagnostic(stdout: str, stderr: str) -> str | None:
    for text in (stderr, stdout):
        for line in text.splitlines():
            if "error:" in line or "Error:" in line:
                return line.strip()
    return None


def classify(case: Case, reply: dict, stdout: str, stderr: str, tmp: str = "") -> tuple[str, str]:
    if tmp:  # `%t` in a regex stands for this case's temporary directory
        case = dataclasses.replace(case, error=case.error and case.error.replace("%t", re.escape(tmp)))
    if case.is_api:
        return _classify_api(case, reply, stdout, stderr)
    code = reply["exit"]
    output_problem = _output_problem(case, stdout, stderr)
    over_limit = _over_limit(case, reply, stderr)
    if over_limit:
        return "over-limit", over_limit
    if "Traceback (most recent call last)" in stderr + stdout:
        return "traceback", f"exit {code}: {_tail(stderr or stdout)}" + (f" [at {reply['where']}]" if reply.get("where") else "")
    if case.error is None:
        if code != case.expected_exit:
            return "wrongly-rejected", f"exit {code}: {_tail(stderr or stdout, 2)}"
        if output_problem:
            return "exit0-garbage", output_problem
        return "ok", ""
    diagnostic = _diagnostic(stdout, stderr)
    if code == 0:
        return "exit0-garbage", f"exit 0: {_tail(stdout or stderr, 2)}"
    if diagnostic is None:
        return "other-message", f"exit {code}, no diagnostic: {_tail(stderr or stdout, 2)}"
    location = LOCATION.search(diagnostic)
    if location and location["file"] != (case.file or case.path).replace("%t", tmp):
        if location["file"].startswith("<") or case.at is not None:
            return "in-generated", diagnostic
    if case.at is not None:
        if location is None:
            return "unlocated", diagnostic
        found = (int(location["line"]), int(location["col"]))
        if found != case.at:
            return "wrong-location", f"at {found[0]}:{found[1]}, expected {case.at[0]}:{case.at[1]}: {diagnostic}"
    if not re.search(case.error, diagnostic):
        return "other-message", diagnostic
    if code != case.expected_exit:
        return "wrong-exit", f"exit {code}, expected {case.expected_exit}: {diagnostic}"
    if output_problem:
        return "other-message", output_problem
    return "ok", ""


def _output_problem(case: Case, stdout: str, stderr: str) -> str | None:
    for patterns, text, name, wanted in ((case.stdout, stdout, "stdout", True), (case.stderr, stderr, "stderr", True),
                                         (case.not_stdout, stdout, "stdout", False),
                                         (case.not_stderr, stderr, "stderr", False)):
        for pattern in patterns:
            if bool(re.search(pattern, text, re.MULTILINE)) != wanted:
                return f"{name} {'lacks' if wanted else 'has'} /{pattern}/: {_tail(text, 2)}"
    return None


def _classify_api(case: Case, reply: dict, stdout: str, stderr: str) -> tuple[str, str]:
    raised = reply.get("exception")
    output_problem = _output_problem(case, stdout, stderr)
    if case.raises is None:
        if raised:
            kind = "wrongly-rejected" if USER_ERRORS & set(raised) else "traceback"
            return kind, f"{raised[0]}: {reply['message']} [at {reply['where']}]"
        return ("exit0-garbage", output_problem) if output_problem else ("ok", "")
    if not raised:
        return "exit0-garbage", f"no exception; stdout: {_tail(stdout)}"
    name, regex = case.raises
    text = f"{raised[0]}: {reply['message']}"
    if not set(name.split("|")) & set(raised):
        if USER_ERRORS & set(raised):
            return "other-message", text
        return "traceback", f"{text} [at {reply['where']}]"
    if not re.search(regex, reply["message"]):
        return "other-message", text
    return "ok", ""


def run_all(cases: list[Case], jobs: int = 2, timeout: float = DEFAULT_TIMEOUT, progress: bool = False) -> list[Result]:
    # Slow cases (subprocesses, hostir-run, API cases that spawn ranks) first, so the pool ends together.
    def cost(case: Case) -> int:
        run = case.run or ""
        return 0 if not case.in_process else 1 if "hostir-run" in run or "run_spmd" in Path(ROOT / case.path).read_text() else 2

    queue = sorted(cases, key=cost)
    results: dict[str, Result] = {}
    lock = threading.Lock()

    def serve() -> None:
        worker = Worker()
        try:
            while True:
                with lock:
                    if not queue:
                        return
                    case = queue.pop(0)
                try:
                    result = run_case(case, worker, timeout)
                except Exception as error:  # noqa: BLE001 -- a broken case must not stop the others
                    result = Result(case, "skipped", f"runner error: {type(error).__name__}: {error}", None, 0.0)
                with lock:
                    results[case.path] = result
                    if progress:
                        print(f"[{len(results)}/{len(cases)}] {result.outcome:16} {result.seconds:5.1f}s {case.path}",
                              file=sys.stderr, flush=True)
        finally:
            worker.stop()

    threads = [threading.Thread(target=serve) for _ in range(max(1, jobs))]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return [results[c.path] for c in cases]


def table(results: list[Result]) -> str:
    counts = Counter(r.outcome for r in results)
    lines = [f"{'outcome':18} {'cases':>5}  meaning", f"{'-' * 18} {'-' * 5}  {'-' * 40}"]
    for outcome, meaning in OUTCOMES.items():
        if counts[outcome]:
            lines.append(f"{outcome:18} {counts[outcome]:5}  {meaning}")
    lines.append(f"{'total':18} {len(results):5}")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="run_corpus", description=__doc__.split("\n\n")[0])
    parser.add_argument("patterns", nargs="*", help="regexes: run only the cases whose path matches one")
    parser.add_argument("-j", "--jobs", type=int, default=2)
    parser.add_argument("--timeout", type=float, default=DEFAULT_TIMEOUT, help="seconds per case (default 60)")
    parser.add_argument("--json", help="write every result to this file")
    parser.add_argument("--corpus", type=Path, default=CORPUS,
                        help="the directory of cases (default: this one; tests/security/hostile holds more)")
    parser.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("-v", "--verbose", action="store_true", help="list every case, not only failing ones")
    args = parser.parse_args(argv)
    if args.worker:
        worker()
        return 0
    start = time.perf_counter()
    results = run_all(all_cases(args.patterns, args.corpus.resolve()), args.jobs, args.timeout, progress=True)
    for r in results:
        if args.verbose or r.outcome != "ok":
            print(f"{r.outcome:16} {r.case.path}\n{'':16} {r.detail[:400]}")
    print()
    print(table(results))
    print(f"\n{len(results)} cases in {time.perf_counter() - start:.0f} s")
    if args.json:
        Path(args.json).write_text(json.dumps([
            {"case": r.case.path, "outcome": r.outcome, "detail": r.detail, "exit": r.exit, "seconds": round(r.seconds, 2),
             "where": r.where, "stdout": r.stdout[-2000:], "stderr": r.stderr[-2000:]} for r in results], indent=1))
    return 0 if all(r.outcome in ("ok", "skipped") for r in results) else 1


if __name__ == "__main__":
    sys.exit(main())
