"""CUDA-graph replay of a whole host program: `Evaluator(..., cuda_graph=True)`.

The first run for an input signature captures the program (its streams, collectives,
copy-engine transfers and waits) in one CUDA graph; later runs with that signature copy
their inputs into the graph's input buffers and replay it, which costs the host one graph
launch whatever the number of host ops.

The contract:
- Signature: every tensor input's shape, strides, dtype and device, and every scalar
  argument's value (the capture bakes scalars into the kernels and loop bounds). A new
  signature is captured in a new graph, with its own memory pool.
- Inputs are copied into buffers the graph owns (its static inputs) before each replay:
  the caller keeps its tensors and may change them between runs. A caller that runs many
  times on data it produces can bind its inputs once instead (`Evaluator.bind_inputs`): it
  gets the graph's own input buffers, filled with its data, writes later data into them in
  place, and a replay that is given them copies nothing.
- Outputs: with `cuda_graph=True`, the graph's own buffers, valid until the next run of
  this evaluator with the same signature, which overwrites them (as `torch.cuda.graphs`
  does): a caller that keeps results across runs clones them. By default (`cuda_graph`
  left None: a graph wherever the program is on a GPU and capturable) replaying is never
  visible to a caller who did not ask for it: a result is never overwritten while the
  caller holds it. Each signature has two graphs used in turn, each computing its results
  into buffers of its own, allocated outside the graphs' shared memory pool; a run
  replays one whose earlier results the caller no longer holds (no tensor of the caller
  shares their storage) and hands its buffers out, copying nothing. A caller that holds
  the results of both gets copies, from a third graph (the copy costs one write of each
  output), as does every run of a program whose results have no static shape. In that
  mode a caller who passes the same tensors a second time in a row gets them bound (the
  program is captured again on them, and the graphs that copied them are dropped): its
  replays copy nothing in.
- The first capture of an evaluator follows one eager run, on every rank at the same call
  (every rank runs its programs in the same order), which creates what capture cannot: NCCL
  communicators, cuBLAS handles, worker streams. Symmetric buffers and their flags exist
  before any run (they are created when the program is compiled). Later signatures are
  captured without an eager run, so no rank ever posts collectives the others do not.
- The copy-engine slot counters are rewound when a run begins, i.e. when the program is
  captured; replays reuse the captured slots (flags are binary and reset by their waiter).
- On CPU ranks (gloo) there are no CUDA graphs: the option is accepted, the capture check
  runs alike, and every run is eager (`Evaluator.graph_mode` says so).

The capture check (`check_capturable`) refuses, when the program is compiled and from the
program text alone (so every rank refuses alike), what a replay cannot reproduce. Every
handler and kernel was audited for host synchronizations, host reads of device values,
host-to-device copies and data-dependent extents: control flow and extents depend only on
host values (loop bounds, scalars, shapes), which are part of the signature, and no kernel
reads a device value on the host (a binary op's scalar operand is a CPU 0-d tensor, passed
to the kernel as an argument, not copied to the device). What remains refused is what a
graph's fixed addresses cannot express:
- an op that writes into an argument of the program (or a view of one): a replay writes
  into the graph's copy of the argument, not into the caller's tensor;
- returning an argument (or a view of one): the result would be the graph's copy;
- random numbers without a seed operand (`fusion.rng_seed`, `fusion.uniform` without
  `seed`): each run draws the next state of a host counter, which a replay would repeat.
"""

from __future__ import annotations

import gc
import weakref
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from typing import Any

import torch
from xdsl.ir import SSAValue

from hostir.passes.buffer_aliases import written_operands
from hostir_dialect import fusion, hir
from hostir_dialect.diagnostics import HostIRError, op_error

from .buffers import BufferUses
from .result_sets import ResultSets, storage_uses
from .streams import CudaStreams

CUDA_GRAPH = "cuda graph"
EAGER = "eager"
EAGER_ON_CPU = "eager (cuda_graph requested, but CPU ranks have no CUDA graphs)"


def graph_mode(cuda_graph: bool | None, device: torch.device, program: hir.ProgramOp | None) -> str:
    """How runs of `program` (None: a fusion, always eager) execute: CUDA_GRAPH, EAGER,
    EAGER_ON_CPU, or with the default (`cuda_graph` None) on a GPU, eager and why a
    graph could not replay the program. `cuda_graph=True` refuses such a program."""
    if cuda_graph is False or program is None or (cuda_graph is None and device.type != "cuda"):
        return EAGER
    if cuda_graph:
        check_capturable(program)
        return CUDA_GRAPH if device.type == "cuda" else EAGER_ON_CPU
    try:
        check_capturable(program)
    except HostIRError as error:
        return f"{EAGER} (no CUDA graph: {error})"
    return CUDA_GRAPH


def check_capturable(program: hir.ProgramOp) -> None:
    """Refuse, at the op, what a CUDA graph of `program` could not replay (see the module doc)."""
    _check_host_random_states(program)
    uses = BufferUses(program)
    for op in program.walk():
        for written in written_operands(op):
            argument = uses.argument_of(written)
            if argument is not None:
                raise op_error(op, f"writes into {_name(argument)}, an argument of @{program.sym_name.data}: a CUDA graph "
                                   "would write into its own copy of the argument, not into the caller's tensor")
    terminator = program.body.block.last_op
    assert terminator is not None
    for value in terminator.operands:
        argument = uses.argument_of(value)
        if argument is not None:
            raise op_error(terminator, f"returns {_name(argument)}, an argument of @{program.sym_name.data} "
                                       "(or a view of it): a CUDA graph's outputs are its own buffers")


def _check_host_random_states(program: hir.ProgramOp) -> None:
    units = [op.unit() for op in program.walk() if isinstance(op, hir.PostOnStreamOp)]
    for op in (op for function in (program, *units) for op in function.walk()):
        if isinstance(op, fusion.RngSeedOp) or (isinstance(op, fusion.UniformOp) and op.seed is None):
            raise op_error(op, "draws new random numbers at each run from a host counter, which a CUDA graph's "
                               "replays would repeat; give it a seed operand, or run without a graph")


def _name(value: SSAValue) -> str:
    return f"%{value.name_hint}" if value.name_hint else f"argument #{value.index}"  # type: ignore[attr-defined]  # a function's inputs are block arguments


# --------------------------------------------------------------------------- #
# Capture and replay (CUDA)
# --------------------------------------------------------------------------- #


def signature(inputs: Sequence[Any]) -> tuple:
    """What a captured graph is specific to (see the module doc). Computed before every
    run's launch, so written for speed (a list comprehension, `torch.Size` as it is)."""
    return tuple([(x.shape, x.stride(), x.dtype, x.device) if isinstance(x, torch.Tensor) else (type(x), x)
                  for x in inputs])


class _Captured:
    """One graph, its input buffers and its outputs."""

    def __init__(self, graph: torch.cuda.CUDAGraph, inputs: list, outputs: list):
        self.graph = graph
        self.inputs = inputs
        self.outputs = outputs

    def bind(self, inputs: Sequence[Any]) -> list:
        """The graph's input buffers, holding `inputs`."""
        return _copied_in(self.inputs, inputs)

    def replay(self, inputs: Sequence[Any]) -> list:
        self.bind(inputs)
        self.graph.replay()
        return list(self.outputs)

    def pool(self) -> Any:
        """The graph's memory pool, for graphs that share it."""
        return self.graph.pool()


HANDED_OUT_GRAPHS = 2
"""Graphs per input binding whose outputs the default mode hands out in turn: a caller
that keeps the previous run's results while it runs the next (`y = f(x)` in a loop) finds
the other graph's free."""


class _InTurns:
    """The graphs of one input binding in the default mode (`CudaGraphs` for_callers).

    A replay hands out the graph's own output buffers, as new aliases, and only replays a
    graph none of whose outputs the caller still holds (no tensor outside this object
    shares their storage): up to HANDED_OUT_GRAPHS graphs are captured and used in turn.
    A caller that holds the outputs of all of them gets copies, from one more graph whose
    outputs are never handed out. The graphs share one memory pool (their intermediates
    replay one after another), which is only safe because no output lives in it: each
    graph's results are computed into buffers allocated outside the capture
    (`Evaluator.result_buffers`). Where results have no static shape there are no such
    buffers, and every run copies from one graph with a pool of its own."""

    def __init__(self, inputs: list, capture: Callable[..., _Captured], result_buffers: Callable[[], list | None]):
        self.inputs = inputs
        self._capture = capture
        self._result_buffers = result_buffers
        self._pool: Any = None
        """The memory pool of the first graph, which the others share."""
        self._handed: list[tuple[_Captured, list[int]]] = []
        """Graphs whose outputs are handed out, with their outputs' storage uses when only
        this object holds them."""
        self._kept: _Captured | None = None

    def __len__(self) -> int:
        return len(self._handed) + (self._kept is not None)

    def bind(self, inputs: Sequence[Any]) -> list:
        return _copied_in(self.inputs, inputs)

    def run(self, inputs: Sequence[Any]) -> list:
        free = next((captured for captured, alone in self._handed if storage_uses(captured.outputs) == alone), None)
        if free is None and len(self._handed) < HANDED_OUT_GRAPHS:
            free = self._handed_out_graph()
        if free is not None:
            return [x.detach() if isinstance(x, torch.Tensor) else x for x in free.replay(inputs)]
        if self._kept is None:
            self._kept = self._captured(self._result_buffers())
        return [x.clone() if isinstance(x, torch.Tensor) else x for x in self._kept.replay(inputs)]

    def _handed_out_graph(self) -> _Captured | None:
        """A new graph whose outputs may be handed out (None where results have no buffers)."""
        results = self._result_buffers()
        if results is None:
            return None
        # Counted before the capture, when nothing but this object can hold them: a
        # reference the run keeps (a collective's work, say) then never reads as free
        # (copies), and one it drops later cannot hide a result the caller holds.
        alone = storage_uses(results)
        captured = self._captured(results)
        assert all(x is r for x, r in zip(captured.outputs, results)), "a program compiled with result buffers returns them"
        self._handed.append((captured, alone))
        return captured

    def _captured(self, results: list | None) -> _Captured:
        captured = self._capture(self.inputs, self._pool, results)
        self._pool = captured.pool()
        return captured


def _copied_in(buffers: list, inputs: Sequence[Any]) -> list:
    """The graph's input `buffers`, holding `inputs` (a buffer passed in itself is not copied)."""
    for buffer, value in zip(buffers, inputs):
        if isinstance(buffer, torch.Tensor) and buffer is not value:
            buffer.copy_(value)
    return list(buffers)


class _BySet:
    """The graphs of one input binding in the default mode for a program whose peers
    write into its results (runtime/result_sets.py): a graph per result set, computing its
    results into that set's buffers; a run replays the graph of the set every member
    chose for it (`ResultSets.chosen`). The scratch set's graph computes its results anew
    (in the graphs' shared pool) and they are copied before anything else replays."""

    def __init__(self, inputs: list, capture: Callable[..., _Captured], sets: ResultSets):
        self.inputs = inputs
        self._capture = capture
        self._sets = sets
        self._pool: Any = None
        self._graphs: dict[int, _Captured] = {}

    def __len__(self) -> int:
        return len(self._graphs)

    def bind(self, inputs: Sequence[Any]) -> list:
        return _copied_in(self.inputs, inputs)

    def run(self, inputs: Sequence[Any]) -> list:
        k = self._sets.chosen
        captured = self._graphs.get(k) or self._new_graph(k)
        return self._sets.hand_out(k, captured.replay(inputs))

    def _new_graph(self, k: int) -> _Captured:
        """Set k's graph, captured computing into the set's buffers."""
        captured = self._graphs[k] = self._capture(self.inputs, self._pool, self._sets.buffers(k))
        self._pool = captured.pool()
        return captured


class CudaGraphs:
    """The graphs of one evaluator's program, by input signature.

    With `for_callers` (the Evaluator's default graph mode) replaying is never visible to
    the caller: results are the buffers of a graph whose earlier results the caller no
    longer holds, else copies (`_InTurns`); a caller who passes the same tensors again
    (weights, a buffer refilled in place) gets them bound as `Evaluator.bind_inputs` binds
    them: the program is captured again, on the caller's own tensors, and its replays copy
    nothing in while the caller keeps passing them. Nothing is captured while torch's
    profiler records (a new signature runs eagerly).
    `run_eagerly(inputs, results)` runs the program (into `results`, buffers from
    `result_buffers()`, where given). With `result_sets` (a program whose peers write into
    its results), the default mode's graphs are those of the result set chosen for the
    run (`_BySet`)."""

    def __init__(self, run_eagerly: Callable[..., list], streams: CudaStreams, for_callers: bool = False,
                 result_buffers: Callable[[], list | None] = lambda: None, result_sets: ResultSets | None = None):
        self._run_eagerly = run_eagerly
        self._streams = streams
        self._for_callers = for_callers
        self._result_buffers = result_buffers
        self._result_sets = result_sets
        self._graphs: dict[tuple, _Captured] = {}
        """Graphs with `cuda_graph=True`, by signature."""
        self._copying: dict[tuple, _InTurns | _BySet] = {}
        """The default mode's graphs of copied-in inputs, by signature."""
        self._bound: dict[tuple, _InTurns | _BySet] = {}
        """The default mode's graphs captured on a caller's own tensors, by signature."""
        self._previous: list[Any] = []
        """Weak references to the tensors of the previous run (for_callers)."""
        self._last: tuple[tuple | None, Any] = (None, None)
        """The signature object of the last run and what ran it (a graph, or the default
        mode's graphs bound to the caller's tensors): a run given that very object (the
        Evaluator passes the same one while the signature stays) and, in the default mode,
        the same tensors finds them without hashing the signature (host time before the
        launch, which a settled run pays)."""
        self._warm = False
        _LIVE.add(self)

    def release(self) -> None:
        """Drop every captured graph (the next run captures again)."""
        self._graphs.clear()
        self._copying.clear()
        self._bound.clear()
        self._previous = []
        self._last = (None, None)

    def __len__(self) -> int:
        return len(self._graphs) + sum(map(len, self._copying.values())) + sum(map(len, self._bound.values()))

    def run(self, inputs: Sequence[Any], key: tuple | None = None) -> list:
        """Run `inputs` (of signature `key`, computed here where not given)."""
        key = signature(inputs) if key is None else key
        if not self._for_callers:
            return self._captured(inputs, key).replay(inputs)
        if torch.autograd.profiler._is_profiler_enabled and not self._has_graph(key):
            # The default graph mode does not capture while torch's profiler records: a new
            # signature runs eagerly, once, so a profile shows each op once (not a warm-up, a
            # capture and a replay: nvFuser's tests count the kernels of a first run).
            if self._result_sets is not None:
                return self._result_sets.run_into_chosen(lambda buffers: self._run_eagerly(inputs, buffers))
            return self._run_eagerly(inputs)
        return self._for_caller(inputs, key).run(inputs)

    def _has_graph(self, key: tuple) -> bool:
        return key in self._graphs or key in self._copying or key in self._bound

    def bind(self, inputs: Sequence[Any]) -> list:
        """The input buffers of the graphs of `inputs`' signature (captured now, with
        `cuda_graph=True`, if it is new), holding `inputs`; a run given them copies nothing in."""
        if self._for_callers:
            return self._copying_in(inputs, signature(inputs)).bind(inputs)
        return self._captured(inputs, signature(inputs)).bind(inputs)

    def _captured(self, inputs: Sequence[Any], key: tuple) -> _Captured:
        last_key, last = self._last
        if key is last_key:
            return last
        captured = self._graphs.get(key)
        if captured is None:
            captured = self._graphs[key] = self._capture([_static_copy(x) for x in inputs])
        self._last = (key, captured)
        return captured

    def _copying_in(self, inputs: Sequence[Any], key: tuple) -> _InTurns | _BySet:
        """The graphs that copy inputs of signature `key` in."""
        turns = self._copying.get(key)
        if turns is None:
            turns = self._copying[key] = self._turns([_static_copy(x) for x in inputs])
        return turns

    def _turns(self, inputs: list) -> _InTurns | _BySet:
        """The default mode's graphs of one input binding."""
        if self._result_sets is not None:
            return _BySet(inputs, self._capture, self._result_sets)
        return _InTurns(inputs, self._capture, self._result_buffers)

    def _for_caller(self, inputs: Sequence[Any], key: tuple) -> _InTurns | _BySet:
        """The graphs bound to these very tensors, bound now if the caller passes the
        same ones a second time in a row, else the graphs that copy them in."""
        last_key, last = self._last
        if key is last_key and _same_objects(last.inputs, inputs):
            return last
        bound = self._bound.get(key)
        if bound is not None and _same_objects(bound.inputs, inputs):
            self._last = (key, bound)
            return bound
        repeated = _same_objects([ref() if isinstance(ref, weakref.ref) else ref for ref in self._previous], inputs)
        self._previous = [weakref.ref(x) if isinstance(x, torch.Tensor) else x for x in inputs]
        if not repeated:
            return self._copying_in(inputs, key)
        bound = self._bound[key] = self._turns(list(inputs))
        self._copying.pop(key, None)  # its input copies and memory pool are not needed any more
        return bound

    def _capture(self, inputs: list, pool: Any = None, results: list | None = None) -> _Captured:
        """`inputs`' run captured in a new graph (in memory `pool`, shared with other graphs
        that replay one after another; a pool of its own when None), computing its results
        into `results` where given."""
        if not self._warm:
            self._warm_up(inputs)
        graph = torch.cuda.CUDAGraph()
        # thread_local: the NCCL watchdog thread may query events while this thread captures.
        with _no_garbage_collection(), torch.cuda.graph(graph, pool=pool, capture_error_mode="thread_local"), \
                self._streams.capturing():
            outputs = self._run_eagerly(inputs, results)
        return _Captured(graph, inputs, outputs)

    def _warm_up(self, static: list) -> None:
        """One eager run on a side stream, as torch.cuda.graphs recommends (see the module doc)."""
        current = torch.cuda.current_stream()
        side = torch.cuda.Stream()
        side.wait_stream(current)
        with torch.cuda.stream(side):
            self._run_eagerly(static)
        current.wait_stream(side)
        self._warm = True


_LIVE: weakref.WeakSet[CudaGraphs] = weakref.WeakSet()
"""Every evaluator's graphs, while the evaluator lives."""


def release_cuda_graphs() -> None:
    """Drop the CUDA graphs of every live evaluator of this process. Call it before
    `torch.distributed.destroy_process_group()`: NCCL's communicator teardown waits until
    every CUDA graph that captured one of its collectives is destroyed, so with an
    evaluator (or a FusionDefinition's cached one) still alive, the destroy never returns
    (pytorch/pytorch#115388; found on 2x H200 at the end of the nvFuser port, both ranks
    in destroy_process_group). hostir's launcher calls it before its own destroy."""
    for graphs in list(_LIVE):
        graphs.release()


@contextmanager
def _no_garbage_collection() -> Iterator[None]:
    """No cycle collection while a graph is captured: it may free a symmetric-memory
    tensor of an unreachable earlier program, whose unmapping CUDA refuses during capture
    (found on GPUs: a rank aborted with 'operation not permitted when stream is
    capturing'). torch.cuda.graph collects before capturing; this keeps it from running
    during the capture."""
    enabled = gc.isenabled()
    gc.collect()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


def _same_objects(previous: Sequence[Any], inputs: Sequence[Any]) -> bool:
    """The same tensor objects (and equal other values) as before, in order."""
    return len(previous) == len(inputs) and all(
        (p is x) if isinstance(x, torch.Tensor) else (p == x) for p, x in zip(previous, inputs))


def _static_copy(value: Any) -> Any:
    if not isinstance(value, torch.Tensor):
        return value
    return torch.empty_like(value).copy_(value)  # the caller's strides, where they are dense
