"""The multi-rank launcher and `hostir-run`: failures stop every rank and name the culprit."""

from __future__ import annotations

import json
import os
import pickle
import re
import signal
import subprocess
import sys
import threading
import time
import types
from pathlib import Path

import pytest
import torch

from hostir.runtime import Job, SpmdError, cli, launcher, run_spmd, run_spmd_batch
from hostir.runtime.cli import console_main
from hostir.runtime.launcher import RankResult, launch
from hostir_dialect import parse_module

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "examples"
HOST_PROGRAMS = EXAMPLES / "host_programs"

X = "!fusion.tensor<f32[2 didx, 4], mesh=[0, 1]>"
G = "!fusion.tensor<f32[2, 4], mesh=[0, 1]>"
ALLGATHER = f"""hir.program @main(%x: {X}) -> {G} {{
  %o = hir.allocate : {G}
  %w = hir.allgather %x -> %o team [0, 1] : {X} -> {G}
  hir.wait %w
  hir.return %o : {G}
}}"""


def test_run_spmd_returns_every_ranks_outputs():
    shards = [[torch.full((1, 4), 1.0)], [torch.full((1, 4), 2.0)]]
    outputs = run_spmd(ALLGATHER, shards, world_size=2, backend="gloo")
    expected = torch.tensor([[1.0] * 4, [2.0] * 4])
    assert [len(o) for o in outputs] == [1, 1]
    assert all(torch.equal(o[0], expected) for o in outputs)


def test_a_job_refused_while_compiling_can_be_its_result_and_the_launch_goes_on():
    # The differential harness launches many programs at once: one refused on every rank
    # (here: a CUDA graph cannot return its argument, checked alike on CPU ranks) is that
    # job's result, and the next job still runs.
    returns_its_argument = f"hir.program @main(%x: {X}) -> {X} {{\n  hir.return %x : {X}\n}}"
    shards = [[torch.full((1, 4), 1.0)], [torch.full((1, 4), 2.0)]]
    jobs = [Job(returns_its_argument, shards, cuda_graph=True, refusal_is_a_result=True), Job(ALLGATHER, shards)]
    refused, gathered = run_spmd_batch(jobs, world_size=2, backend="gloo")
    assert [r.refusal for r in refused] == ["<job>:2:3: error: 'hir.return' op returns %x, an argument of @main (or a "
                                            "view of it): a CUDA graph's outputs are its own buffers"] * 2
    assert all(torch.equal(r.outputs[0], torch.tensor([[1.0] * 4, [2.0] * 4])) for r in gathered)
    with pytest.raises(SpmdError, match="op returns %x, an argument of @main"):
        run_spmd_batch([Job(returns_its_argument, shards, cuda_graph=True)], world_size=2, backend="gloo")


def test_a_failing_rank_stops_the_others_and_is_named():
    # Rank 1 gets a wrongly shaped input and fails before posting; rank 0 would wait for
    # it in the allgather forever if the launcher did not stop it.
    shards = [[torch.zeros(1, 4)], [torch.zeros(3, 4)]]
    start = time.monotonic()
    with pytest.raises(SpmdError, match=r"rank 1 failed: InputError: @main argument 0 \(%x\): expected shape \[1, 4\]"):
        run_spmd_batch([Job(ALLGATHER, shards)], world_size=2, backend="gloo", collective_timeout=60)
    assert time.monotonic() - start < 50, "the launcher waited for the collective timeout"


def test_a_failing_launch_keeps_the_results_of_the_jobs_every_rank_finished_before():
    # The differential harness goes on after a crash from the job after the culprit; the
    # jobs before it need not run again. Job 1 fails on rank 1 (a wrongly shaped input).
    good, bad = [[torch.full((1, 4), 1.0)], [torch.full((1, 4), 2.0)]], [[torch.zeros(1, 4)], [torch.zeros(3, 4)]]
    jobs = [Job(ALLGATHER, good), Job(ALLGATHER, bad), Job(ALLGATHER, good)]
    with pytest.raises(SpmdError, match="rank 1 failed: InputError") as error:
        run_spmd_batch(jobs, world_size=2, backend="gloo", keep_progress=True)
    (first,) = error.value.completed
    assert all(torch.equal(r.outputs[0], torch.tensor([[1.0] * 4, [2.0] * 4])) for r in first)
    with pytest.raises(SpmdError) as unkept:
        run_spmd_batch(jobs, world_size=2, backend="gloo")
    assert unkept.value.completed == []


def test_the_culprit_is_named_even_when_a_peer_it_cut_off_exits_first(tmp_path):
    # Rank 1 failed first and wrote its record; rank 0, whose connection to it closed,
    # exited before rank 1 did (CI saw this order once): rank 1 is still the culprit.
    for rank, (when, message) in enumerate([(2.0, "ExecutionError: connection closed by peer"),
                                            (1.0, "InputError: expected shape [1, 4]")]):
        (tmp_path / f"rank{rank}.err").write_text(json.dumps({"finished": False, "time": when, "message": message}))
    processes = [types.SimpleNamespace(pid=10), types.SimpleNamespace(pid=11)]
    assert launcher._failure(tmp_path, {0: 1}, processes) == "rank 1 failed: InputError: expected shape [1, 4]"


def test_a_rank_blocked_on_a_missing_peer_times_out():
    # Only rank 0 holds the buffer, so only it receives; nobody sends.
    T = "!fusion.tensor<f32[4], mesh=[0]>"
    program = f"""hir.program @main(%x: {T}, %peer: index) -> {T} {{
  %w = hir.recv %x, %peer : {T}
  hir.wait %w
  hir.return %x : {T}
}}"""
    with pytest.raises(SpmdError, match=r"rank 0 failed: .*(?i:timed out|timeout)"):
        run_spmd_batch([Job(program, [[torch.zeros(4), 1], [None, 0]])], world_size=2, backend="gloo",
                       collective_timeout=3)


# Both ranks receive from each other and nobody sends: they block in the receive until the
# collective timeout, unless one of them is killed.
T0 = "!fusion.tensor<f32[4], mesh=[0]>"
T1 = "!fusion.tensor<f32[4], mesh=[1]>"
MUTUAL_RECV = f"""hir.program @main() {{
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %a = hir.allocate : {T0}
  %b = hir.allocate : {T1}
  %wa = hir.recv %a, %c1 : {T0}
  %wb = hir.recv %b, %c0 : {T1}
  hir.wait %wa
  hir.wait %wb
  hir.return
}}"""


def spawned_ranks(parent: int) -> list[int]:
    """The pids of the rank processes `parent` started: the children of its
    multiprocessing fork server (the ranks fork from it, runtime/launcher.py)."""
    children: dict[int, list[tuple[int, bytes]]] = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():  # self, thread-self: not a process of their own
            continue
        try:
            stat = (entry / "stat").read_text()
            command = (entry / "cmdline").read_bytes()
        except OSError:  # it just exited
            continue
        ppid = int(stat.rsplit(")", 1)[1].split()[1])
        children.setdefault(ppid, []).append((int(entry.name), command))
    servers = [pid for pid, command in children.get(parent, []) if b"multiprocessing.forkserver" in command]
    return sorted(pid for server in servers for pid, _ in children.get(server, []))


def blocked(pid: int) -> tuple[str, int]:
    """(state, CPU ticks) of a process, from /proc/PID/stat."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return fields[0], int(fields[11]) + int(fields[12])


def wait_until_blocked(parent: int, ranks: int, deadline: float = 200) -> list[int]:
    """The rank pids once all of them are asleep after their start-up work (rendezvous)
    and stay asleep: blocked in the program's receive."""
    stop = time.monotonic() + deadline
    while time.monotonic() < stop:
        pids = spawned_ranks(parent)
        if len(pids) == ranks:
            try:
                before = [blocked(p) for p in pids]
                time.sleep(2)
                after = [blocked(p) for p in pids]
            except FileNotFoundError:  # a process that just exited: not a rank that is blocked
                continue
            # Forked from a server that imported the runtime, a rank starts in a few CPU
            # ticks; blocked, it sleeps but for gloo's polling (a tick a second or so).
            if all(a[0] == "S" and a[1] - b[1] <= 4 for b, a in zip(before, after)):
                return pids
        else:
            time.sleep(0.5)
    raise AssertionError(f"the {ranks} ranks of process {parent} never blocked")


def gone(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    return False


def test_killing_a_rank_in_a_collective_stops_run_spmd_and_names_it():
    outcome: list[BaseException] = []

    def run() -> None:
        try:
            run_spmd(MUTUAL_RECV, [[], []], world_size=2, backend="gloo", collective_timeout=120)
        except BaseException as error:  # noqa: BLE001 -- handed to the test thread
            outcome.append(error)

    thread = threading.Thread(target=run)
    thread.start()
    pids = wait_until_blocked(os.getpid(), 2)
    victim = pids[1]
    os.kill(victim, signal.SIGKILL)
    killed = time.monotonic()
    thread.join(timeout=100)
    assert not thread.is_alive(), "run_spmd did not return after a rank was killed"
    assert time.monotonic() - killed < 30, "the other rank waited for the collective timeout"
    (error,) = outcome
    assert isinstance(error, SpmdError)
    assert re.fullmatch(rf"rank [01] failed: killed by signal SIGKILL \(pid {victim}\)", str(error)), str(error)
    assert all(gone(pid) for pid in pids)


def test_killing_a_rank_in_a_collective_stops_hostir_run_and_names_it(tmp_path):
    program = tmp_path / "mutual_recv.mlir"
    program.write_text(MUTUAL_RECV)
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    command = [sys.executable, "-c", "from hostir.runtime.cli import console_main; console_main()", str(program),
               "--nproc", "2", "--backend", "gloo"]
    with subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env,
                          cwd=ROOT) as tool:
        pids = wait_until_blocked(tool.pid, 2)
        victim = pids[0]
        os.kill(victim, signal.SIGKILL)
        killed = time.monotonic()
        _, stderr = tool.communicate(timeout=100)
    assert time.monotonic() - killed < 30, "the other rank waited for the collective timeout"
    assert tool.returncode == 1
    last_line = stderr.splitlines()[-1]
    expected = rf"hostir-run: error: rank [01] failed: killed by signal SIGKILL \(pid {victim}\)"
    assert re.fullmatch(expected, last_line), stderr
    assert all(gone(pid) for pid in [tool.pid, *pids])


def hostir_run(*args: str) -> subprocess.CompletedProcess:
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    command = [sys.executable, "-c", "from hostir.runtime.cli import console_main; console_main()", *args]
    return subprocess.run(command, capture_output=True, text=True, env=env, cwd=ROOT, timeout=240)


def test_hostir_run_prints_outputs_matching_the_reference():
    result = hostir_run(str(HOST_PROGRAMS / "host_allgather_matmul.mlir"), "--nproc", "2", "--number-of-streams", "2",
                        "--repeat", "2", "--seed", "3")
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert lines[0].startswith("output 0: shape [2, 2, 4, 16] dtype float32 checksum ")
    error = float(lines[0].rsplit("max error vs reference ", 1)[1])
    assert error < 1e-5
    assert lines[1].startswith("median time: ") and lines[1].endswith("over 2 run(s) on 2 rank(s)")


def cli_error(args: list[str], capsys) -> str:
    """Run hostir-run in this process; it must exit 1 with a one-line message."""
    with pytest.raises(SystemExit) as exit_info:
        console_main(args)
    assert exit_info.value.code == 1
    stderr = capsys.readouterr().err
    assert stderr.count("\n") == 1 and "Traceback" not in stderr, stderr
    return stderr


@pytest.mark.parametrize("args, message", [
    (["missing.mlir"], r"^hostir-run: error: cannot read missing.mlir"),
    ([str(HOST_PROGRAMS / "host_allgather.mlir"), "--nproc", "0"], r"^hostir-run: error: --nproc must be at least 1"),
    ([str(HOST_PROGRAMS / "host_allgather.mlir"), "--inputs", "a.pt", "b.pt"], r"@main takes 1 inputs, 2 files given"),
    ([str(HOST_PROGRAMS / "host_allgather.mlir"), "--inputs", "missing.pt"], r"cannot load missing.pt"),
    ([str(HOST_PROGRAMS / "host_allgather.mlir"), "--program", "nope"], r"no hir.program or fusion.func named @nope"),
])
def test_hostir_run_bad_input_exits_1_with_one_line(args, message, capsys):
    assert re.search(message, cli_error(args, capsys))


def test_hostir_run_refuses_inputs_of_the_wrong_shape(tmp_path, capsys):
    path = tmp_path / "x.pt"
    torch.save(torch.zeros(3, 8), path)
    stderr = cli_error([str(HOST_PROGRAMS / "host_allgather.mlir"), "--inputs", str(path)], capsys)
    assert re.search(r"argument 0 \(%x\): expected shape \[2, 8\] .* got \[3, 8\]", stderr)


@pytest.mark.parametrize("text, where, message", [
    ("hir.program @main() {\n  %x = hir.bogus\n}\n", 2, "Operation hir.bogus is not registered"),
    ("!t = !fusion.tensor<f32[4]>\nhir.program @main(%a: !t) -> !t {\n"
     "  %b = fusion.add %a, %a : !t, !t -> !fusion.tensor<f32[5]>\n  hir.return %a : !t\n}\n", 3,
     "'fusion.add' op result axes [5] do not match"),
])
def test_hostir_run_reports_bad_ir_at_its_location(tmp_path, capsys, text, where, message):
    bad = tmp_path / "bad.mlir"
    bad.write_text(text)
    stderr = cli_error([str(bad)], capsys)
    assert stderr.startswith(f"{bad}:{where}:") and "error: " in stderr and message in stderr, stderr


def test_a_rank_error_in_a_lowered_fusion_names_the_users_file():
    # The ranks read the lowered program as text; its ops keep the user's locations, so
    # the division's failure points at line 3 of user.mlir, not into the generated text.
    I32 = "!fusion.tensor<i32[2 didx, 4], mesh=[0, 1]>"
    fusion = f"""fusion.func @f(%a: {I32}, %b: {I32}) -> {I32} {{
  %q = fusion.div %a, %b : {I32}, {I32} -> {I32}
  fusion.return %q : {I32}
}}"""
    shards = [[torch.ones(1, 4, dtype=torch.int32), torch.zeros(1, 4, dtype=torch.int32)]] * 2
    with pytest.raises(SpmdError, match=r"rank \d failed: ExecutionError: user.mlir:2:3: error: 'fusion.div' op failed"):
        run_spmd(parse_module(fusion, "user.mlir"), shards, world_size=2, backend="gloo", lower=True)


@pytest.mark.parametrize("example", sorted(EXAMPLES.glob("*/*.mlir")), ids=lambda p: f"{p.parent.name}/{p.name}")
def test_hostir_run_runs_every_example_with_its_defaults(example, capsys):
    # On the ranks its meshes name, checked against its reference (exit 1 if it differs).
    console_main([str(example)])
    out = capsys.readouterr().out
    assert "max error vs reference" in out and "median time" in out, out


# -- under torchrun: rank 0 gathers every rank's result, as data ----------------------


def run_as_a_torchrun_rank(rank: int, world_size: int, args: list[str]) -> str | None:
    """hostir-run as one rank of an existing world (RANK and WORLD_SIZE are set), with
    unpickling forbidden: the results must cross as data."""
    def refuse(*_args, **_kwargs):
        raise AssertionError("a rank unpickled bytes from its peers")

    pickle.loads, pickle.load = refuse, refuse  # in this rank only, which exits after
    result = cli.run(cli.parse_args(args))
    return None if result is None else result.text


def test_a_torchrun_world_gathers_results_without_pickles(tmp_path):
    trace = tmp_path / "run.json"
    texts = launch(run_as_a_torchrun_rank, 2, ([str(HOST_PROGRAMS / "host_allgather.mlir"), "--trace", str(trace)],),
                   backend="gloo")
    assert texts[1] is None
    lines = texts[0].splitlines()
    assert re.match(r"output 0: shape \[2, 8\] dtype float32 checksum \S+ max error vs reference 0$", lines[0]), texts[0]
    assert lines[1].endswith("over 1 run(s) on 2 rank(s)") and f"trace: wrote {trace}" in lines
    assert {event.get("pid") for event in json.loads(trace.read_text())["traceEvents"]} >= {0, 1}


def test_a_rank_result_is_encoded_as_json_and_raw_bytes():
    outputs = [torch.randn(2, 3), None, torch.tensor(True), torch.arange(6, dtype=torch.int64).reshape(3, 2).t(),
               torch.randn(4, dtype=torch.bfloat16), torch.zeros(0, 5)]
    result = RankResult(outputs, [0.5, 0.25], [("fusion.neg", 7)], "eager")
    decoded = cli._decode(cli._encode(result))
    assert decoded.times == result.times and decoded.stream_log == result.stream_log and decoded.trace is None
    assert decoded.graph_mode == "eager" and decoded.outputs[1] is None
    for got, expected in zip(decoded.outputs, outputs):
        if expected is not None:
            assert got.dtype == expected.dtype and torch.equal(got, expected)


# -- bounds: worlds, time limits -----------------------------------------------------


@pytest.mark.parametrize("mesh, args, message", [
    ("[0, 40]", [], r"^{file}:1:1: error: 'fusion.func' op uses mesh \[0, 40\], a world of 41 ranks: more than "
                    r"the 16 CPU ranks hostir-run spawns \(--max-world\)$"),
    ("[0, 9223372036854775806]", [], r"a world of 9223372036854775807 ranks: more than the 16 CPU ranks"),
    ("[0, 40]", ["--max-world", "8", "--nproc", "41"], r"^hostir-run: error: --nproc 41 is more than the 8 CPU ranks "),
    ("[0, 1]", ["--nproc", "1000000000"], r"^hostir-run: error: --nproc 1000000000 is more than the 16 CPU ranks"),
])
def test_hostir_run_refuses_a_world_larger_than_max_world_before_spawning(tmp_path, capsys, count_calls, mesh, args,
                                                                        message):
    path = tmp_path / "big.mlir"
    t = f"!fusion.tensor<f32[2 didx, 4], mesh={mesh}>"
    path.write_text(f"fusion.func @f(%a: {t}) -> {t} {{\n  %b = fusion.neg %a : {t} -> {t}\n"
                    f"  fusion.return %b : {t}\n}}\n")
    lowerings = count_calls(launcher.passes, "lower")
    spawns = count_calls(launcher.mp, "start_processes")
    assert re.search(message.format(file=re.escape(str(path))), cli_error([str(path), *args], capsys))
    assert lowerings == [] and spawns == []


def test_run_spmd_refuses_a_world_larger_than_max_world(count_calls):
    spawns = count_calls(launcher.mp, "start_processes")
    with pytest.raises(ValueError, match=r"a world of 3 CPU ranks is more than max_world=2 allows"):
        run_spmd(ALLGATHER, [[torch.zeros(1, 4)]] * 3, world_size=3, backend="gloo", max_world=2)
    assert spawns == []


@pytest.mark.parametrize("option, value", [("--timeout", "inf"), ("--timeout", "1e300"), ("--timeout", "nan"),
                                           ("--collective-timeout", "1e300"), ("--collective-timeout", "0")])
def test_hostir_run_refuses_time_limits_beyond_a_week(capsys, option, value):
    stderr = cli_error([str(HOST_PROGRAMS / "host_allgather.mlir"), option, value], capsys)
    assert stderr.startswith(f"hostir-run: error: {option} must be positive and at most 604800 seconds (a week)")


def test_the_reference_runs_within_the_timeout(tmp_path, capsys):
    # The program returns its input at once; its reference multiplies 2048 x 2048
    # matrices 400 times (some 7 TFLOP, half a minute at two cores' peak; 40 of them, 0.7
    # TFLOP, once finished within the 3 s): stopped at --timeout, not after minutes.
    t, r = "!fusion.tensor<f32[2048, 2048]>", "!fusion.tensor<f32[2048, 2048, r2048]>"
    products = "\n".join(f"  %p{k + 1} = fusion.matmul %p{k}, %b : {r if k else t}, {t} -> {r}" for k in range(400))
    path = tmp_path / "slow_reference.mlir"
    path.write_text(f"""hir.program @main(%p0: {t}, %b: {t}) -> {t} {{
  hir.return %p0 : {t}
}}
fusion.func @reference(%p0: {t}, %b: {t}) -> {t} {{
{products}
  %out = fusion.set %p400 : {r} -> {t}
  fusion.return %out : {t}
}}
""")
    start = time.monotonic()
    stderr = cli_error([str(path), "--timeout", "3"], capsys)
    assert stderr == "hostir-run: error: the 1 rank(s) did not finish within 3 s and were stopped\n"
    assert time.monotonic() - start < 60


# -- bounds: input files, output paths -----------------------------------------------


WIDE = "!fusion.tensor<f32[2 didx, 100000000], mesh=[0, 1]>"


@pytest.mark.parametrize("value, message", [
    (lambda: torch.zeros(1, 1).expand(2, 10**8), r"holds a view of 800000000 bytes of elements on 4 bytes of storage "
                                                 r"\(an expanded tensor\); hostir-run expands at most 64 MiB more"),
    (lambda: torch.zeros(2, 10**8, layout=torch.sparse_coo), r"holds a sparse_coo tensor; hostir-run takes dense"),
    (lambda: torch.empty(2, 10**8, device="meta"), r"holds a meta tensor, which has no values"),
])
def test_hostir_run_refuses_inputs_that_would_materialize_beyond_their_file(tmp_path, capsys, count_calls, value,
                                                                           message):
    # Regression (issue 31, defects 4 and 7): a 1.6 KB file of an expanded tensor was
    # materialized whole on every rank; a sparse one failed in a traceback.
    program, x = tmp_path / "wide.mlir", tmp_path / "x.pt"
    program.write_text(f"hir.program @main(%x: {WIDE}) -> {WIDE} {{\n  hir.return %x : {WIDE}\n}}\n")
    torch.save(value(), x)
    spawns = count_calls(launcher.mp, "start_processes")
    assert re.search(f"^hostir-run: error: {re.escape(str(x))} {message}", cli_error([str(program), "--inputs", str(x)],
                                                                                  capsys))
    assert spawns == []


def test_hostir_run_takes_an_expanded_input_of_modest_size(tmp_path, capsys):
    x = tmp_path / "x.pt"
    torch.save(torch.arange(8.0).expand(2, 8), x)
    console_main([str(HOST_PROGRAMS / "host_allgather.mlir"), "--inputs", str(x)])
    assert re.match(r"output 0: shape \[2, 8\] dtype float32 checksum 112 max error vs reference 0$",
                    capsys.readouterr().out.splitlines()[0])


@pytest.mark.parametrize("option, path, message", [
    ("--trace", "nodir/t.json", "--trace nodir/t.json: directory nodir does not exist"),
    ("--timeline", "{file}/t.png", "--timeline {file}/t.png: {file} is not a directory"),
    ("--trace", "{tmp}", "--trace {tmp} is a directory"),
])
def test_hostir_run_refuses_an_output_path_before_running(tmp_path, capsys, count_calls, option, path, message):
    # Regression (issue 31, defect 7): --trace nodir/t.json failed only after the whole run.
    file = tmp_path / "file"
    file.write_text("")
    spawns = count_calls(launcher.mp, "start_processes")
    stderr = cli_error([str(HOST_PROGRAMS / "host_allgather.mlir"), option, path.format(file=file, tmp=tmp_path)],
                       capsys)
    assert stderr == f"hostir-run: error: {message.format(file=file, tmp=tmp_path)}\n" and spawns == []
