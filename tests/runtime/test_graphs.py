"""CUDA-graph mode on CPU ranks: the capture check refuses, at the op, what a graph could
not replay (on every rank alike, from the program text), and accepted programs run eagerly
with the results of eager mode. The capture itself is tested on GPUs: here (a second replay
posts the graph launch alone, on one GPU and on two) and in test_gpu.py."""

from __future__ import annotations

import gc
import weakref

import pytest
import torch
import torch.distributed as dist

from hostir import DeviceMesh, FusionDefinition, ParallelType
from hostir.runtime import Evaluator, RankResult, execute, launch, shard_tensor
from hostir.runtime.cli import report
from hostir.runtime.evaluator import InputError
from hostir.runtime.graphs import (
    CUDA_GRAPH,
    EAGER,
    EAGER_ON_CPU,
    CudaGraphs,
    _no_garbage_collection,
    check_capturable,
    graph_mode,
    release_cuda_graphs,
    signature,
)
from hostir.runtime.launcher import device_for
from hostir.runtime.result_sets import RESULT_SETS, ResultSets
from hostir_dialect import hir
from hostir_dialect.context import parse_module
from hostir_dialect.diagnostics import HostIRError

T = "!fusion.tensor<f32[4, 8]>"
ROW = "!fusion.tensor<f32[8]>"
S = "!fusion.tensor<f32[2 didx, 8], mesh=[0, 1]>"
G = "!fusion.tensor<f32[2, 8], mesh=[0, 1]>"


def program_text(args: str, body: str, results: str) -> str:
    return f"hir.program @main({args}) -> ({results}) {{\n{body}\n}}\n"


def the_program(text: str) -> hir.ProgramOp:
    (program,) = [op for op in parse_module(text, "graph.mlir").ops if isinstance(op, hir.ProgramOp)]
    return program


REFUSED = {
    "compute into an argument": (
        program_text(f"%a: {T}, %o: {T}", f"  %b = fusion.neg %a into %o : {T} -> {T}\n  hir.return %a : {T}", T),
        r"graph.mlir:2:3: error: 'fusion.neg' op writes into %o, an argument of @main: a CUDA graph would write "
        r"into its own copy of the argument, not into the caller's tensor",
    ),
    "compute into a view of an argument": (
        program_text(f"%a: {T}, %o: {T}", "  %c0 = arith.constant 0 : index\n"
                     f"  %r = hir.alias_select %o[%c0] axis 0 : {T} -> {ROW}\n"
                     f"  %x = hir.alias_select %a[%c0] axis 0 : {T} -> {ROW}\n"
                     f"  %b = fusion.exp %x into %r : {ROW} -> {ROW}\n  %c = fusion.set %a : {T} -> {T}\n"
                     f"  hir.return %c : {T}", T),
        r"graph.mlir:5:3: error: 'fusion.exp' op writes into %o, an argument of @main",
    ),
    "post_on_stream into an argument": (
        program_text(f"%a: {T}, %o: {T}", f"  %b = hir.post_on_stream @neg(%a) outs(%o : {T}) : ({T}) -> {T}\n"
                     f"  %c = fusion.set %b : {T} -> {T}\n  hir.return %c : {T}", T)
        + f"fusion.func @neg(%x: {T}) -> {T} {{\n  %y = fusion.neg %x : {T} -> {T}\n  fusion.return %y : {T}\n}}\n",
        r"graph.mlir:2:3: error: 'hir.post_on_stream' op writes into %o, an argument of @main",
    ),
    "collective into an argument": (
        program_text(f"%s: {S}, %g: {G}", f"  %w = hir.allgather %s -> %g team [0, 1] : {S} -> {G}\n  hir.wait %w\n"
                     f"  %c = fusion.set %g : {G} -> {G}\n  hir.return %c : {G}", G),
        r"graph.mlir:2:3: error: 'hir.allgather' op writes into %g, an argument of @main",
    ),
    "recv into an argument": (
        program_text(f"%a: {T}", f"  %c1 = arith.constant 1 : index\n  %w = hir.recv %a, %c1 : {T}\n  hir.wait %w\n"
                     f"  %c = fusion.set %a : {T} -> {T}\n  hir.return %c : {T}", T),
        r"graph.mlir:3:3: error: 'hir.recv' op writes into %a, an argument of @main",
    ),
    "random numbers of a host counter": (
        program_text(f"%a: {T}", f"  %lo = arith.constant 0.0 : f64\n  %hi = arith.constant 1.0 : f64\n"
                     f"  %u = fusion.uniform %lo, %hi stream 0 : f64, f64 -> {T}\n  %c = fusion.add %a, %u : {T}, {T} -> {T}\n"
                     f"  hir.return %c : {T}", T),
        r"graph.mlir:4:3: error: 'fusion.uniform' op draws new random numbers at each run from a host counter, which "
        r"a CUDA graph's replays would repeat",
    ),
    "returning an argument": (
        program_text(f"%a: {T}", f"  hir.return %a : {T}", T),
        r"graph.mlir:2:3: error: 'hir.return' op returns %a, an argument of @main \(or a view of it\): "
        r"a CUDA graph's outputs are its own buffers",
    ),
    "returning a view of an argument": (
        program_text(f"%a: {T}", f"  %c0 = arith.constant 0 : index\n  %r = hir.alias_select %a[%c0] axis 0 : {T} -> {ROW}\n"
                     f"  hir.return %r : {ROW}", ROW),
        r"graph.mlir:4:3: error: 'hir.return' op returns %a, an argument of @main",
    ),
}


@pytest.mark.parametrize("case", list(REFUSED))
def test_the_capture_check_refuses_at_the_op(case):
    text, message = REFUSED[case]
    with pytest.raises(HostIRError, match=f"^{message}"):
        check_capturable(the_program(text))


def test_the_evaluator_runs_the_capture_check_only_in_graph_mode():
    text, message = REFUSED["compute into an argument"]
    module = parse_module(text, "graph.mlir")
    with pytest.raises(HostIRError, match=f"^{message}"):
        Evaluator(module, cuda_graph=True)
    a, o = torch.randn(4, 8), torch.zeros(4, 8)
    Evaluator(module).run([a, o])
    torch.testing.assert_close(o, -a)


def test_graph_mode_is_for_host_programs():
    text = f"fusion.func @f(%a: {T}) -> {T} {{\n  %b = fusion.neg %a : {T} -> {T}\n  fusion.return %b : {T}\n}}"
    with pytest.raises(ValueError, match="cuda_graph runs a hir.program; @f is a fusion.func"):
        Evaluator(parse_module(text), cuda_graph=True)


def test_graph_mode_by_device_and_program():
    capturable = the_program(f"hir.program @p(%a: {T}) -> {T} {{\n  %b = fusion.neg %a : {T} -> {T}\n  hir.return %b : {T}\n}}")
    not_capturable = the_program(REFUSED["compute into an argument"][0])
    cuda, cpu = torch.device("cuda", 0), torch.device("cpu")
    assert graph_mode(False, cuda, capturable) == EAGER
    assert graph_mode(True, cuda, capturable) == CUDA_GRAPH
    assert graph_mode(True, cpu, capturable) == EAGER_ON_CPU
    # The default: a graph on GPUs wherever the program can be captured, and why not elsewhere.
    assert graph_mode(None, cuda, capturable) == CUDA_GRAPH
    assert graph_mode(None, cpu, capturable) == EAGER
    assert graph_mode(None, cuda, None) == EAGER  # a fusion runs eagerly
    reason = graph_mode(None, cuda, not_capturable)
    assert reason.startswith("eager (no CUDA graph: ") and "an argument of @" in reason
    with pytest.raises(HostIRError):
        graph_mode(True, cuda, not_capturable)


def test_signatures_tell_shapes_strides_dtypes_and_scalars_apart():
    x = torch.zeros(4, 8)
    assert signature([x, 3]) == signature([torch.ones(4, 8), 3])
    for other in ([x.t().contiguous().t(), 3], [x.double(), 3], [torch.zeros(4, 9), 3], [x, 4], [x, None]):
        assert signature(other) != signature([x, 3])


def two_minus(chunks: int) -> FusionDefinition:
    """A stream pipeline with a scalar lhs (2 - x): the kernel the audit fixed."""
    with FusionDefinition() as fd:
        x = fd.define_tensor([chunks, 8])
        y = fd.ops.sub(fd.define_scalar(2.0), x)
        fd.add_output(y)
    y.axis(0).parallelize(ParallelType.Stream)
    return fd


def test_cpu_ranks_accept_graph_mode_and_run_eagerly():
    fd = two_minus(4)
    host = fd.lower()
    check_capturable(the_program(str(host)))
    x = torch.randn(4, 8)
    evaluator = Evaluator(host, cuda_graph=True)
    assert evaluator.graph_mode == EAGER_ON_CPU and evaluator.graphs is None
    for _ in range(2):
        (got,) = evaluator.run([x])
        torch.testing.assert_close(got, 2 - x)
    (got,) = fd.execute([x], cuda_graph=True)
    torch.testing.assert_close(got, 2 - x)
    (bound,) = evaluator.bind_inputs([x])
    assert bound is x  # eagerly there are no graph buffers to bind to
    with pytest.raises(InputError, match="argument 0"):
        evaluator.bind_inputs([torch.randn(4, 9)])


def test_hostir_run_names_the_graph_mode_only_when_asked_for_graphs():
    program = the_program(program_text(f"%a: {T}", f"  hir.return %a : {T}", T))
    eager = RankResult([torch.zeros(4, 8)], [1e-3], None)
    assert "graph mode" not in report(program, [eager], 1).text
    on_cpu = RankResult([torch.zeros(4, 8)], [1e-3], None, EAGER_ON_CPU)
    assert report(program, [on_cpu], 1).text.endswith(f"graph mode: {EAGER_ON_CPU}")


def test_execute_passes_the_option_on():
    text, message = REFUSED["returning an argument"]
    with pytest.raises(HostIRError, match=message):
        execute(parse_module(text, "graph.mlir"), [torch.zeros(4, 8)], cuda_graph=True)


# --------------------------------------------------------------------------- #
# GPU: a replay is one graph launch
# --------------------------------------------------------------------------- #


def ag_matmul(chunks: int) -> FusionDefinition:
    """AG+matmul over `chunks` stream chunks on 2 ranks (the overlap benchmark's schedule)."""
    with FusionDefinition() as fd:
        a = fd.define_tensor([chunks, 2, 64, 32])
        b = fd.define_tensor([32, 16])
        c = fd.ops.matmul(a, b)
        fd.add_output(c)
    mesh = DeviceMesh([0, 1])
    for tensor in (a, b, c):
        tensor.set_device_mesh(mesh)
    a.axis(1).parallelize(ParallelType.DIDx)
    c.axis(0).parallelize(ParallelType.Stream)
    return fd


def second_replay_host_work(rank: int, world_size: int, program: str, per_rank: list) -> dict:
    device = device_for(dist.get_backend(), rank)
    evaluator = Evaluator(parse_module(program), number_of_streams=4, device=device, cuda_graph=True)
    inputs = [x.to(device) for x in per_rank[rank]]
    evaluator.run(inputs)  # captures, then replays once
    torch.cuda.synchronize(device)
    activities = [torch.profiler.ProfilerActivity.CPU, torch.profiler.ProfilerActivity.CUDA]
    with torch.profiler.profile(activities=activities) as profile:
        (output,) = evaluator.run(inputs)
        torch.cuda.synchronize(device)
    output = output.cpu()  # a graph's output buffer: the next run overwrites it
    host = [e.name for e in profile.events() if e.device_type == torch.autograd.DeviceType.CPU]
    # Bound inputs are the graph's own buffers: a replay given them copies nothing in, and
    # data written into them in place is what the next replay reads.
    bound = evaluator.bind_inputs(inputs)
    torch.cuda.synchronize(device)
    with torch.profiler.profile(activities=activities) as bound_profile:
        evaluator.run(bound)
        torch.cuda.synchronize(device)
    bound_host = [e.name for e in bound_profile.events() if e.device_type == torch.autograd.DeviceType.CPU]
    for buffer in bound:
        buffer.mul_(-2.0)
    (refilled,) = evaluator.run(bound)
    return {"host": host, "output": output, "graphs": len(evaluator.graphs), "bound_host": bound_host,
            "refilled": refilled.cpu()}


def assert_second_replay_posts_only_the_launch(result: dict, expected: torch.Tensor) -> None:
    torch.testing.assert_close(result["output"], expected, rtol=1e-3, atol=1e-3)  # TF32 may be on
    assert result["graphs"] == 1
    ops = [name for name in result["host"] if name.startswith(("aten::", "c10d::", "nccl:", "record_param"))]
    assert ops == ["aten::copy_", "aten::copy_"], result["host"]  # the two inputs into the graph's buffers
    assert result["host"].count("cudaGraphLaunch") == 1, result["host"]
    assert not {"cudaLaunchKernel", "cudaEventRecord", "cudaStreamWaitEvent"} & set(result["host"]), result["host"]
    assert not [name for name in result["bound_host"] if name.startswith("aten::")], result["bound_host"]
    assert result["bound_host"].count("cudaGraphLaunch") == 1, result["bound_host"]
    torch.testing.assert_close(result["refilled"], 4 * expected, rtol=1e-3, atol=1e-3)


@pytest.mark.gpu
@pytest.mark.skipif(torch.cuda.device_count() < 2, reason="needs 2 CUDA GPUs")
def test_gpu_a_second_replay_posts_nothing_but_the_input_copies_and_the_graph_launch_and_bound_inputs_not_even_those():
    fd = ag_matmul(4)
    host = fd.lower()
    program = the_program(str(host))
    a, b = torch.randn(4, 2, 64, 32), torch.randn(32, 16)
    per_rank = [[shard_tensor(x, arg.type, r) for x, arg in zip((a, b), program.args)] for r in range(2)]
    for rank, result in enumerate(launch(second_replay_host_work, 2, (str(host), per_rank), backend="nccl")):
        assert_second_replay_posts_only_the_launch(result, shard_tensor(a @ b, program.function_type.outputs.data[0], rank))


@pytest.mark.gpu
@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")
def test_gpu_a_stream_pipeline_on_one_device_replays_with_the_graph_launch_alone():
    with FusionDefinition() as fd:
        a = fd.define_tensor([4, 64, 32])
        b = fd.define_tensor([32, 16])
        c = fd.ops.matmul(a, b)
        fd.add_output(c)
    c.axis(0).parallelize(ParallelType.Stream)
    a, b = torch.randn(4, 64, 32), torch.randn(32, 16)
    (result,) = launch(second_replay_host_work, 1, (str(fd.lower()), [[a, b]]), backend="nccl")
    assert_second_replay_posts_only_the_launch(result, a @ b)


def default_mode_results(rank: int, world_size: int, program: str, per_rank: list) -> dict:
    """Runs with the default graph mode as users run it: results dropped by the next run,
    then every result kept; and the host work of a replay in the first pattern."""
    device = device_for(dist.get_backend(), rank)
    evaluator = Evaluator(parse_module(program), number_of_streams=4, device=device)
    a, b = (x.to(device) for x in per_rank[rank])
    inputs = [[a * k, b] for k in range(1, 7)]
    dropped = []
    y = None
    for run in inputs[:4]:
        (y,) = evaluator.run(run)
        dropped.append(y.cpu())
    torch.cuda.synchronize(device)
    with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU]) as profile:
        (y,) = evaluator.run(inputs[4])
        torch.cuda.synchronize(device)
    dropped.append(y.cpu())
    del y
    kept = [evaluator.run(run)[0] for run in inputs]
    return {"mode": evaluator.graph_mode, "dropped": dropped, "kept": [k.cpu() for k in kept],
            "host": [e.name for e in profile.events()], "graphs": len(evaluator.graphs or ())}


@pytest.mark.gpu
@pytest.mark.skipif(torch.cuda.device_count() < 2, reason="needs 2 CUDA GPUs")
def test_gpu_the_default_graph_mode_hands_out_its_buffers_without_copies_and_never_overwrites_held_results():
    host = ag_matmul(4).lower()
    program = the_program(str(host))
    a, b = torch.randn(4, 2, 64, 32), torch.randn(32, 16)
    per_rank = [[shard_tensor(x, arg.type, r) for x, arg in zip((a, b), program.args)] for r in range(2)]
    for rank, result in enumerate(launch(default_mode_results, 2, (str(host), per_rank), backend="nccl")):
        expected = shard_tensor(a @ b, program.function_type.outputs.data[0], rank)
        assert result["mode"] == CUDA_GRAPH
        for k, got in enumerate([*result["dropped"], *result["kept"]]):
            torch.testing.assert_close(got, (k + 1 if k < 5 else k - 4) * expected, rtol=1e-3, atol=1e-3)
        assert "aten::clone" not in result["host"], result["host"]
        assert result["host"].count("aten::copy_") == 2, result["host"]  # the two inputs, into the graph's
        assert result["graphs"] == 3  # two handed out in turn, one whose results are copied


_KEPT: list[Evaluator] = []
"""Evaluators a rank keeps alive past its job, as a FusionDefinition keeps its cached one."""


def keeps_a_graph_of_nccl_collectives(rank: int, world_size: int, program: str, per_rank: list) -> int:
    device = device_for(dist.get_backend(), rank)
    evaluator = Evaluator(parse_module(program), number_of_streams=4, device=device, cuda_graph=True)
    inputs = [x.to(device) for x in per_rank[rank]]
    evaluator.run(inputs)  # captured, with its NCCL all-gathers
    evaluator.run(inputs)
    torch.cuda.synchronize(device)
    _KEPT.append(evaluator)
    return len(evaluator.graphs or ())


@pytest.mark.gpu
@pytest.mark.skipif(torch.cuda.device_count() < 2, reason="needs 2 CUDA GPUs")
def test_gpu_a_live_graph_of_nccl_collectives_does_not_hang_the_launch_at_its_end():
    """NCCL's teardown waits for every CUDA graph that captured its collectives to be
    destroyed: an evaluator still alive when the launcher destroys the process group hung
    both ranks forever (the nvFuser port on 2x H200). The launcher releases live graphs
    first."""
    host = ag_matmul(4).lower(pipeline="hostir-lower{transport=nccl}")
    assert "hir.allgather" in str(host) and "copy_engine" not in str(host)
    program = the_program(str(host))
    a, b = torch.randn(4, 2, 64, 32), torch.randn(32, 16)
    per_rank = [[shard_tensor(x, arg.type, r) for x, arg in zip((a, b), program.args)] for r in range(2)]
    assert launch(keeps_a_graph_of_nccl_collectives, 2, (str(host), per_rank), backend="nccl", timeout=90) == [1, 1]


def test_releasing_the_graphs_of_live_evaluators_drops_every_capture(monkeypatch):
    monkeypatch.setattr(CudaGraphs, "_capture", _fake_capture([]))
    kept, dropped = CudaGraphs(lambda inputs: [], None, for_callers=True), CudaGraphs(lambda inputs: [], None)
    x = torch.zeros(2)
    kept.run([x])
    kept.run([x])  # bound
    dropped.run([x])
    del dropped
    gc.collect()
    assert len(kept) == 1
    release_cuda_graphs()
    assert len(kept) == 0
    kept.run([x])  # captures again
    assert len(kept) == 1


class _FakeCaptured:
    """A captured graph on CPU: replays compute inputs[0] + 1 into its output buffer (the
    results it was captured with, or one of its own)."""

    def __init__(self, inputs, pool, results):
        self.inputs, self.replays = list(inputs), 0
        self.memory_pool = pool if pool is not None else object()  # a pool of its own
        self.outputs = list(results) if results is not None else [torch.empty(2)]

    def replay(self, inputs):
        self.replays += 1
        self.outputs[0].copy_(inputs[0] + 1)
        return list(self.outputs)

    def pool(self):
        return self.memory_pool


def _fake_capture(captures: list):
    def capture(self, inputs, pool=None, results=None):
        captures.append(_FakeCaptured(inputs, pool, results))
        return captures[-1]

    return capture


def test_the_default_graph_mode_binds_tensors_passed_again(monkeypatch):
    """Evaluator's default graph mode (CudaGraphs(for_callers=True)): the first run of a
    signature captures a graph that copies its inputs in; the same tensors passed again
    are bound (captured once more on them, the copying graph dropped) and then reused;
    other tensors of that signature go back to a copying graph. Without result buffers
    (results of no static shape) outputs are copies."""
    captures = []
    monkeypatch.setattr(CudaGraphs, "_capture", _fake_capture(captures))
    graphs = CudaGraphs(lambda inputs: [], None, for_callers=True)
    weights, x, y = torch.ones(2), torch.zeros(2), torch.full((2,), 3.0)
    out = graphs.run([x, weights])
    assert len(captures) == 1 and captures[0].inputs[0] is not x and not _shares_storage(out[0], captures[0].outputs[0])
    graphs.run([x, weights])  # the same tensors again: bound
    assert len(captures) == 2 and captures[1].inputs[0] is x and len(graphs) == 1
    graphs.run([x, weights])
    graphs.run([x, weights])
    assert len(captures) == 2 and captures[1].replays == 3
    graphs.run([y, weights])  # another tensor of the same signature: a copying graph again
    assert len(captures) == 3 and captures[2].inputs[0] is not y and captures[1].replays == 3


def test_the_last_runs_signature_object_finds_its_graphs_only_for_the_same_tensors(monkeypatch):
    """The Evaluator passes one signature object while the signature stays, and the graphs
    find the last run's by its identity, without hashing it: in the default mode only for
    the very tensors they are bound to; other tensors of that signature get a copying
    graph (replaying the bound one would compute on the tensors it was captured with)."""
    captures = []
    monkeypatch.setattr(CudaGraphs, "_capture", _fake_capture(captures))
    graphs = CudaGraphs(lambda inputs: [], None, for_callers=True)
    x, y = torch.zeros(2), torch.full((2,), 3.0)
    key = signature([x])
    for _ in range(3):
        graphs.run([x], key)  # bound at the second run, found by identity at the third
    assert len(captures) == 2 and captures[1].inputs[0] is x and captures[1].replays == 2
    graphs.run([y], key)
    assert len(captures) == 3 and captures[2].inputs[0] is not y and captures[1].replays == 2
    graphs.run([x], signature([x]))  # an equal signature, another object: found by value
    assert len(captures) == 3 and captures[1].replays == 3


def test_an_explicit_graph_is_found_by_the_last_signature_object_or_by_value(monkeypatch):
    captures = []
    monkeypatch.setattr(CudaGraphs, "_capture", _fake_capture(captures))
    graphs = CudaGraphs(lambda inputs: [], None)
    x, wide = torch.zeros(2), torch.zeros(2, dtype=torch.float64)
    key = signature([x])
    graphs.run([x], key)
    graphs.run([x], key)
    graphs.run([x], signature([x]))
    assert len(captures) == 1 and captures[0].replays == 3
    graphs.run([wide], signature([wide]))  # another signature: a graph of its own
    graphs.run([x], key)
    assert len(captures) == 2 and [c.replays for c in captures] == [4, 1]


def _shares_storage(a: torch.Tensor, b: torch.Tensor) -> bool:
    return a.untyped_storage().data_ptr() == b.untyped_storage().data_ptr()


def _graphs_with_result_buffers(monkeypatch, captures: list) -> CudaGraphs:
    monkeypatch.setattr(CudaGraphs, "_capture", _fake_capture(captures))
    return CudaGraphs(lambda inputs: [], None, for_callers=True, result_buffers=lambda: [torch.empty(2)])


def test_a_caller_that_drops_each_result_by_the_next_run_gets_the_graphs_buffers_in_turn(monkeypatch):
    """`y = f(x)` in a loop holds the previous y while the next run replays: two graphs,
    sharing one memory pool, hand out their own result buffers in turn, and copy nothing."""
    captures = []
    graphs = _graphs_with_result_buffers(monkeypatch, captures)
    y = None
    for k in range(6):
        (y,) = graphs.run([torch.full((2,), float(k))])
        assert torch.equal(y, torch.full((2,), k + 1.0))
        assert _shares_storage(y, captures[k % 2].outputs[0])
    assert len(captures) == 2 and [c.replays for c in captures] == [3, 3]
    assert captures[1].memory_pool is captures[0].memory_pool


def _run_with_result_sets(graphs: CudaGraphs, sets: ResultSets, x: torch.Tensor) -> torch.Tensor:
    """One run as the Evaluator makes it for a program whose peers write into its results."""
    sets.begin_run()
    (y,) = graphs.run([x])
    sets.offer_next()
    return y


def test_result_sets_have_a_graph_each_used_in_turn_and_a_held_result_is_never_overwritten(monkeypatch):
    """The default mode's graphs of a program whose peers write into its results
    (`_BySet`): one per result set, computing into that set's buffers, replayed for the set
    the run was given; `y = f(x)` in a loop takes the sets in turn without copies, and a
    caller that keeps every result gets copies (the scratch set) once every set is held."""
    captures = []
    monkeypatch.setattr(CudaGraphs, "_capture", _fake_capture(captures))
    sets = ResultSets(lambda k: [torch.empty(2)], lambda k: None, agreement=None)
    graphs = CudaGraphs(lambda inputs: [], None, for_callers=True, result_sets=sets)
    y = None
    for k in range(2 * RESULT_SETS):
        y = _run_with_result_sets(graphs, sets, torch.full((2,), float(k)))
        assert torch.equal(y, torch.full((2,), k + 1.0))
        assert _shares_storage(y, captures[k % RESULT_SETS].outputs[0])
    assert len(captures) == RESULT_SETS and all(c.replays == 2 for c in captures)
    kept = [y] + [_run_with_result_sets(graphs, sets, torch.full((2,), 10.0 + k)) for k in range(RESULT_SETS)]
    assert [v[0].item() for v in kept] == [2.0 * RESULT_SETS] + [11.0 + k for k in range(RESULT_SETS)]
    assert len(captures) == RESULT_SETS + 1  # the scratch set's graph
    assert not any(_shares_storage(kept[-1], c.outputs[0]) for c in captures[:RESULT_SETS])  # a copy


def test_results_a_caller_holds_are_never_overwritten(monkeypatch):
    """A caller that keeps every result (or a view of one) gets copies once both graphs'
    buffers are held, from a third graph whose buffers are never handed out; a graph
    whose results the caller drops is used again."""
    captures = []
    graphs = _graphs_with_result_buffers(monkeypatch, captures)
    kept = [graphs.run([torch.full((2,), float(k))])[0] for k in range(2)]
    views = [kept[1][:1]]
    del kept[1]  # its view still holds the buffer
    kept += [graphs.run([torch.full((2,), float(k))])[0] for k in range(2, 5)]
    assert [float(t[0]) for t in kept] == [1.0, 3.0, 4.0, 5.0] and float(views[0][0]) == 2.0
    assert len(captures) == 3 and captures[2].replays == 3
    assert not any(_shares_storage(t, captures[2].outputs[0]) for t in kept)
    del kept[0]  # the first graph's result: that graph is free again
    (y,) = graphs.run([torch.full((2,), 9.0)])
    assert _shares_storage(y, captures[0].outputs[0]) and float(y[0]) == 10.0 and float(views[0][0]) == 2.0


def test_a_reference_the_capture_holds_for_a_while_never_hides_a_result_the_caller_holds(monkeypatch):
    """A run may keep a view of a result for a while (a collective's work): counted as
    the caller's, never as hostir's own, so a graph whose result the caller holds is not
    replayed once that view is gone."""
    captures = []

    def capture(self, inputs, pool=None, results=None):
        captures.append(_FakeCaptured(inputs, pool, results))
        captures[-1].kept_by_the_run = captures[-1].outputs[0][:1]
        return captures[-1]

    monkeypatch.setattr(CudaGraphs, "_capture", capture)
    graphs = CudaGraphs(lambda inputs: [], None, for_callers=True, result_buffers=lambda: [torch.empty(2)])
    (held,) = graphs.run([torch.full((2,), 1.0)])
    del captures[0].kept_by_the_run
    graphs.run([torch.full((2,), 5.0)])
    assert float(held[0]) == 2.0 and len(captures) == 2


def test_a_program_computes_its_results_into_the_buffers_it_is_given():
    """The default graph mode's result buffers, on CPU: a result the program allocates is
    allocated in its buffer, any other (a fresh compute result, a result returned twice)
    is copied into its own; the values are those of a run without buffers."""
    with FusionDefinition() as fd:
        x = fd.define_tensor([4, 8])
        y = fd.ops.sub(fd.define_scalar(2.0), x)
        z = fd.ops.exp(x)
        for out in (y, z, y):
            fd.add_output(out)
    y.axis(0).parallelize(ParallelType.Stream)
    evaluator = Evaluator(fd.lower())
    assert "results[0]" in evaluator.compiled.source  # %T2 is the loop's allocation
    a = torch.randn(4, 8)
    buffers = evaluator.result_buffers()
    got = evaluator.run_eagerly([a], buffers)
    assert all(g is b for g, b in zip(got, buffers))
    for g, expected in zip(got, (2 - a, a.exp(), 2 - a)):
        torch.testing.assert_close(g, expected)
    for g, fresh in zip(got, evaluator.run_eagerly([a])):
        assert torch.equal(g, fresh) and not _shares_storage(g, fresh)


def test_the_default_graph_mode_captures_nothing_while_the_profiler_records(monkeypatch):
    """A first run under torch's profiler runs eagerly, once, and captures nothing (a profile
    shows each op once); after it the first run captures; a graph captured before is
    replayed under the profiler too."""
    captures, eager_runs = [], []
    monkeypatch.setattr(CudaGraphs, "_capture", _fake_capture(captures))
    graphs = CudaGraphs(lambda inputs: eager_runs.append(inputs) or [inputs[0] + 1], None, for_callers=True)
    x = torch.zeros(2)
    with torch.profiler.profile():
        (out,) = graphs.run([x])
    assert not captures and len(eager_runs) == 1 and torch.equal(out, x + 1)
    graphs.run([x])
    assert len(captures) == 1 and len(eager_runs) == 1
    with torch.profiler.profile():
        graphs.run([torch.ones(2)])
    assert len(captures) == 1 and captures[0].replays == 2 and len(eager_runs) == 1


def test_no_cycle_is_collected_while_a_graph_is_captured():
    # A collection during capture freed a symmetric-memory tensor of an earlier program,
    # which CUDA refuses while a stream captures (a rank aborted on GPUs).
    class Cycle:
        def __init__(self):
            self.me = self

    collected = weakref.ref(Cycle())  # unreachable, but freed only by a collection
    with _no_garbage_collection():
        assert collected() is None and not gc.isenabled()
        later = weakref.ref(Cycle())
    assert gc.isenabled() and later() is not None
    gc.collect()
    assert later() is None
