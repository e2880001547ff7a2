"""Differential testing: random fusions (generator.py) lowered by `hostir-lower`, run on
CPU ranks, compared with eager torch on the unsharded data.

Every program ends in exactly one outcome:
- correct: it ran and every output matches the eager reference;
- refused: a pass or the runtime's compiler raised a located HostIRError, or the runtime
  refused the inputs before running (InputError); the message is grouped by cause;
- wrong: it ran, and an output (unsharded, or any rank's own shard or replica) differs
  in value, dtype or shape; or the lowering changed the type of an annotated input/output;
- crash: anything else: a raw Python/torch error, IR that fails to verify after a pass,
  a failure while running (ExecutionError), a frontend or eager-reference failure;
- hang: a collective or the launch timed out.
Definitions the frontend rejects while being built are not programs: counted as `invalid`.

The reference is `runtime.run_fusion` on the definition WITHOUT its schedule (meshes,
splits, parallel types and allocation orders must not change values); run_fusion on the
scheduled fusion must agree, else that is reported as a crash in phase "reference".

Lowerings: every program is lowered by `hostir-lower` with one or more sets of the options
a user can pick (`Lowering`: transport nccl / copy-engine / auto, bounded intermediates,
CUDA-graph replay on GPUs); the stream chunk count S is part of the program. On CPU ranks
the stream hazard check is on (runtime/hazards.py): work the program does not order, which
runs correctly in CPU program order but races on a GPU, is a wrong answer too. With
`--device cuda` every program runs on GPUs (NCCL, one GPU per rank), each run repeated so
that replays and the symmetric buffers' cross-run handshake are exercised.

How programs run (spawning ranks costs ~10 s on 2 cores, so as few launches as possible):
1. In this process: build, reference, lower, then compile every rank's program. A
   program without a collective of two or more ranks runs here, rank by rank (ranks do
   not interact, and compiling needs no process group).
2. A program with collectives is first dry-run here on every rank with a communicator
   that posts nothing: local compile errors and crashes are found without a launch.
3. The survivors of one world size run in ONE launch (`runtime.run_spmd_batch`). A crash
   inside one job kills the launch; the failing job is identified from the location of
   its diagnostic (each job's text is shifted by its own number of blank lines, so the
   line number names the job), recorded, and the jobs after it relaunched: those every
   rank finished before it keep their results (`keep_progress`), so each crash costs one
   launch of what is left, not of everything. A failure without a location is found by
   bisection.

Inputs: floats uniform in [-1, 1), integers in [-3, 3], so every value stays finite
(the generator guards log/sqrt/rsqrt/reciprocal/div/pow; see generator.py). NaN would
still compare equal to NaN (equal_nan) rather than hide a mismatch elsewhere.
Tolerances (rtol, atol): see TOLERANCES; atol is scaled by the largest |expected| value,
because sums of sharded partial results round differently from one eager sum.

CLI:
  python -m tests.differential.harness --programs N --seed S --ranks 1,2,4 --report out.json
  python -m tests.differential.harness --programs 0 --pipelines N --ranks 1,2 --lowerings all
  python -m tests.differential.harness --pipelines N --ranks 2 --lowerings all --device cuda   # on 2 GPUs (4: --ranks 4)
  python -m tests.differential.harness --shrink out.json       # a reproducer per failure
  python -m tests.differential.harness --replay repro.py --ranks 2   # one program, all variants
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import json
import os
import re
import signal
import sys
import threading
import time
import traceback
from collections import Counter, defaultdict
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field

import torch
from hypothesis import HealthCheck, Phase, given, seed, settings
from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp

from hostir import runtime
from hostir.passes import PIPELINES
from hostir.passes.pipeline import PassManagerOptions
from hostir.passes.sharding_policy import is_annotated
from hostir.passes.specialize_extents import SpecializeExtents, dynamic_extents
from hostir.runtime.communicator import DONE, Communicator
from hostir.runtime.evaluator import find_function
from hostir.runtime.hazards import ENVIRONMENT
from hostir.runtime.layouts import logical_shape, torch_dtype
from hostir_dialect import FusionDefinitionError, hir
from hostir_dialect.diagnostics import HostIRError
from hostir_dialect.tensor_type import DYNAMIC, ParallelKind, TensorType

from .generator import WORLD_SIZES, Program, build, pipelines, program_from_source, programs

PASSES = PIPELINES["hostir-lower"]
DISABLED_VARIANTS = (*PASSES, "lower-to-host+convert-op-to-communication")
"""What is disabled in the variants of a sampled program ("+" joins passes): each pass in
turn, and the pair that leaves no host program at all (the fusion then runs as is)."""
OUTCOMES = ("correct", "refused", "wrong", "crash", "hang")
NOT_RUN = "not run"
"""The outcome of a case whose launch the profile's time limit left out (neither a program
of the counts nor a failure)."""
COVERED_OPS = (hir.CollectiveOp, hir.PointToPointOp, hir.PostOnStreamOp, *hir.VIEW_OPS)
TOLERANCES = {  # dtype -> (rtol, atol before scaling)
    torch.float64: (1e-7, 1e-9),
    torch.float32: (1e-4, 1e-5),
    torch.float16: (1e-2, 1e-2),
    torch.bfloat16: (5e-2, 5e-2),  # 8 bits of mantissa, partial sums rounded per rank
}
COLLECTIVE_TIMEOUT = 60.0
"""Seconds a collective may block before its rank gives up (a hang)."""
MAX_JOBS_PER_LAUNCH = 150
TIMED_JOBS_PER_LAUNCH = 20
"""Under a time limit, launches are shorter, so that the last one ends soon after the limit:
on GPUs a launch of 150 jobs, each replayed and its units compiled, ran for minutes past it."""

# Spawned ranks inherit this: c10d's C++ warnings (a peer closing its store connection
# when a launch is stopped) would bury the summary.
os.environ.setdefault("TORCH_CPP_LOG_LEVEL", "ERROR")
# Every CPU rank checks that the work of its streams is ordered (a GPU would race).
os.environ.setdefault(ENVIRONMENT, "1")


@dataclass(frozen=True)
class Lowering:
    """The options a user picks when lowering and running a program."""

    transport: str = "nccl"
    bounded: bool = False
    """`bounded-intermediates`: loop-local intermediates allocated per iteration."""
    cuda_graph: bool | None = False
    """Replay the program from a CUDA graph (GPUs; CPU ranks run it eagerly); None:
    `Evaluator`'s default, a graph wherever the program is capturable, its results handed
    out in turn from two graphs."""
    unit_backend: str | None = None
    """How kernel units run: "eager" or "compiled" (None: the device's default)."""
    symmetric_output: bool = True
    """`symmetric-allreduce-output` (on by default): copy-engine all-reduces push into
    symmetric outputs (returned ones: result sets agreed each run, runtime/result_sets.py)."""
    reduce_in_producer: bool = True
    """`reduce-in-producer` (on by default): a copy-engine all-reduce of a matmul computes
    the own part onto the others' (split-by-member)."""
    skew: bool = True
    """order-chunk-compute's `skew` (on by default): a loop of such all-reduces waits for
    each in the next iteration, after that iteration's compute."""
    reduce_scatter_in_producer: bool = False
    """`reduce-scatter-in-producer` (off by default): a copy-engine reduce-scatter of a
    matmul computes the own part onto the lead's, pushed into its symmetric output."""
    specialized: bool = False
    """`specialize-extents` first, to the run's extents (as `FusionDefinition.execute`
    lowers a fusion of dynamic extents); the same as without it where none is dynamic."""

    @property
    def pipeline(self) -> str:
        symmetric = "" if self.symmetric_output else " symmetric-allreduce-output=false"
        producer = "" if self.reduce_in_producer else " reduce-in-producer=false"
        skew = "" if self.skew else " skew=false"
        scatter = " reduce-scatter-in-producer=true" if self.reduce_scatter_in_producer else ""
        return (f"hostir-lower{{transport={self.transport} bounded-intermediates={str(self.bounded).lower()}"
                f"{symmetric}{producer}{skew}{scatter}}}")

    def __str__(self) -> str:
        graph = {True: ["graph"], None: ["default-graph"], False: []}[self.cuda_graph]
        flags = [*(["bounded"] if self.bounded else []), *graph,
                 *([self.unit_backend] if self.unit_backend else []),
                 *([] if self.symmetric_output else ["no-symmetric-output"]),
                 *([] if self.reduce_in_producer else ["no-reduce-in-producer"]),
                 *([] if self.skew else ["no-skew"]),
                 *(["rs-in-producer"] if self.reduce_scatter_in_producer else []),
                 *(["specialized"] if self.specialized else [])]
        return "+".join([self.transport, *flags])

    @staticmethod
    def parse(text: str) -> Lowering:
        """The lowering `str(lowering)` printed."""
        transport, *flags = text.split("+")
        backend = next((f for f in flags if f in ("eager", "compiled")), None)
        graph = True if "graph" in flags else None if "default-graph" in flags else False
        return Lowering(transport, "bounded" in flags, graph, backend, "no-symmetric-output" not in flags,
                        "no-reduce-in-producer" not in flags, "no-skew" not in flags, "rs-in-producer" in flags,
                        "specialized" in flags)


DEFAULT_LOWERING = Lowering()
PLAIN_ALLREDUCE = {"symmetric_output": False, "reduce_in_producer": False}
CPU_LOWERINGS = tuple(Lowering(t, b) for t in ("nccl", "copy-engine", "auto") for b in (False, True)) + (
    Lowering("copy-engine", **PLAIN_ALLREDUCE), Lowering("copy-engine", True, **PLAIN_ALLREDUCE),
    Lowering("copy-engine", symmetric_output=False), Lowering("copy-engine", reduce_in_producer=False),
    Lowering("copy-engine", skew=False), Lowering("copy-engine", reduce_scatter_in_producer=True),
    Lowering("auto", specialized=True))
GPU_LOWERINGS = tuple(Lowering(t, b, g) for t in ("nccl", "copy-engine", "auto") for b in (False, True)
                      for g in (False, True)) + (Lowering("nccl", unit_backend="eager"),
                                                 Lowering("copy-engine", True, True, "eager"),
                                                 Lowering("auto", False, None), Lowering("copy-engine", False, None),
                                                 Lowering("copy-engine", True, None),
                                                 *(Lowering("copy-engine", b, g, **PLAIN_ALLREDUCE)
                                                   for b in (False, True) for g in (False, True)),
                                                 Lowering("copy-engine", False, True, symmetric_output=False),
                                                 Lowering("copy-engine", False, True, reduce_in_producer=False),
                                                 Lowering("copy-engine", False, True, skew=False),
                                                 Lowering("copy-engine", False, True, reduce_scatter_in_producer=True),
                                                 Lowering("auto", False, None, specialized=True))
"""Every option a differential profile covers, on CPU ranks (units run eagerly there by
default) and on GPUs (units compiled into fused kernels by default; eagerly too). The
copy-engine all-reduce options (both on by default) are also covered off, each alone and
both together, eagerly, replayed and with bounded intermediates, the skewed loop of
such all-reduces off, reduce-scatters computing their own part on (off by default), and
the default lowering of a fusion of dynamic extents, specialized to the run's extents."""
COMPILED_UNIT_LOWERINGS = (Lowering("nccl", unit_backend="compiled"), Lowering("copy-engine", True, False, "compiled"))
"""Compiled units on CPU ranks (Inductor's C++ kernels: seconds per unit, so a few)."""


LOWERING_SECONDS = 120
"""The longest one lowering may take in the harness's own process (the slowest of a
profile's take seconds): a pass that does not end is then a crash of that program, where
it once kept a whole profile from reporting (decompose-reshardings inserted sets without
end on 8 ranks, seed 112)."""


class LoweringDidNotEnd(Exception):
    pass


@contextlib.contextmanager
def _lowering_time_bound():
    """Interrupt what runs inside after LOWERING_SECONDS (on the main thread, where
    signals arrive; elsewhere unbounded)."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def interrupt(*_):
        raise LoweringDidNotEnd(f"lowering ran past {LOWERING_SECONDS} s (a pass that does not end)")

    previous = signal.signal(signal.SIGALRM, interrupt)
    signal.alarm(LOWERING_SECONDS)
    try:
        yield
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, previous)


def lower_fusion(module: ModuleOp, disabled: frozenset[str] = frozenset(),
                 lowering: Lowering = DEFAULT_LOWERING) -> ModuleOp:
    """The one call of the pass pipeline: `hostir-lower` with `lowering`'s options and
    `disabled` passes skipped."""
    from hostir import passes

    return passes.lower(module, PassManagerOptions(disabled=disabled), lowering.pipeline)


# --------------------------------------------------------------------------- #
# Outcomes
# --------------------------------------------------------------------------- #


@dataclass
class Result:
    index: int
    """The program's index in the drawn sequence."""
    world_size: int
    disabled: str | None
    """The passes disabled for this variant, "+"-joined (None: the whole pipeline)."""
    outcome: str
    lowering: str = str(DEFAULT_LOWERING)
    """The lowering options (`Lowering`) of this variant."""
    phase: str = ""
    """Where it ended: build, reference, lower, compile, input, run, spawn, compare."""
    message: str = ""
    where: str = ""
    """The innermost project frame of a raw exception (file:function)."""
    source: str = ""
    ops: int = 0
    note: str = ""
    """Something odd about a correct run (see _dtype_note)."""
    communicated: bool = False
    """Ran on spawned ranks because it has collectives."""
    host_ops: list[str] = field(default_factory=list)
    """Communication and stream ops of the lowered program (for coverage)."""

    @property
    def cause(self) -> str:
        return reason_of(self.message)


def reason_of(message: str) -> str:
    """A message without its location, names and numbers: the key refusals group by."""
    text = message.split("\n")[0]
    text = re.sub(r"^.*?error: ", "", text)
    text = re.sub(r"^rank \d+ failed: \w+: ", "", text)
    text = re.sub(r"<job>:\d+:\d+: error: ", "", text)
    text = re.sub(r"!fusion\.tensor<[^>]*>", "T", text)
    text = re.sub(r"\[[-\d, \[\]?']*\]", "[..]", text)
    text = re.sub(r"[%@][\w.]+", "%v", text)
    text = re.sub(r"\b\d+(\.\d+)?\b", "N", text)
    return text[:160]


def _innermost_project_frame(error: BaseException) -> str:
    frames = traceback.extract_tb(error.__traceback__)
    cause = error.__cause__
    while cause is not None:  # the evaluator wraps kernel errors: look at what it wrapped
        frames = traceback.extract_tb(cause.__traceback__) or frames
        cause = cause.__cause__
    ours = [f for f in frames if re.search(r"/(hostir_dialect|passes|runtime)/", f.filename)]
    frame = (ours or frames or [None])[-1]
    return "" if frame is None else f"{frame.filename.rsplit('/', 2)[-2]}/{frame.filename.rsplit('/', 1)[-1]}:{frame.name}"


_TIMED_OUT = re.compile(r"timed out|timeout|did not finish", re.IGNORECASE)
"""A collective's timeout (gloo) or the launcher's: the program hung."""


def classify(error: BaseException) -> tuple[str, str, str]:
    """(outcome, message, where) of an exception raised while lowering or running."""
    message = str(error).strip()
    if _TIMED_OUT.search(message):
        return "hang", message, ""
    if "stream hazard" in message:  # racy work that program order happened to run right
        return "wrong", message, ""
    if isinstance(error, runtime.SpmdError):  # "rank R failed: Type: message" from a spawned rank
        kind = re.match(r"rank \d+ failed: (\w+)", message)
        refused = kind is not None and kind.group(1) in ("HostIRError", "InputError")
        return ("refused" if refused else "crash"), message, ""
    if isinstance(error, HostIRError) and _raised_by_verifier(error):
        return "crash", f"invalid IR after {_last_pass(error)}: {message}", "passes/pipeline.py:run_passes"
    if isinstance(error, (HostIRError, runtime.InputError)):
        return "refused", message, ""
    if not isinstance(error, runtime.ExecutionError):
        message = f"{type(error).__name__}: {message}"
    return "crash", message, _innermost_project_frame(error)


def _raised_by_verifier(error: BaseException) -> bool:
    """A diagnostic from verifying the IR a pass produced, not from a pass refusing its
    input (the frontend's own IR is verified before lowering)."""
    return any(frame.name == "verify_located" for frame in traceback.extract_tb(error.__traceback__))


def _last_pass(error: BaseException) -> str:
    """The pass that had just run when the verifier failed (from the pass manager's frame)."""
    tb = error.__traceback__
    while tb is not None:
        module_pass = tb.tb_frame.f_locals.get("module_pass")
        if module_pass is not None:
            return getattr(module_pass, "name", "?")
        tb = tb.tb_next
    return "a pass"


# --------------------------------------------------------------------------- #
# Preparing a program: build, reference, lower, shard
# --------------------------------------------------------------------------- #


@dataclass
class Case:
    """One program variant through the pipeline, up to the point where it must run."""

    program: Program
    index: int
    disabled: str | None
    lowering: Lowering = DEFAULT_LOWERING
    module: ModuleOp | None = None
    text: str = ""
    input_types: list = field(default_factory=list)
    output_types: list = field(default_factory=list)
    per_rank_inputs: list = field(default_factory=list)
    expected: list = field(default_factory=list)
    rounding: torch.dtype = torch.float64
    """The least precise floating type the program computes in: an output cast up from it
    carries its rounding (e.g. a split-K sum of float32 products cast to float64)."""
    reference_problem: str = ""
    """Why eager evaluation of the scheduled fusion failed (reported unless the lowered
    program itself fails, which matters more)."""

    def result(self, outcome: str, phase: str = "", message: str = "", where: str = "") -> Result:
        result = Result(self.index, self.program.world_size, self.disabled, outcome, str(self.lowering), phase,
                        message[:2000], where, self.program.source(), self.program.op_count)
        if self.module is not None:
            result.host_ops = sorted({op.name for op in self.module.walk() if isinstance(op, COVERED_OPS)})
        return result

    @property
    def world_size(self) -> int:
        return self.program.world_size


def global_inputs(program: Program, generator: torch.Generator) -> list[torch.Tensor]:
    tensors = []
    for _, shape, dtype in program.inputs:
        torch_dtype = getattr(torch, dtype)
        if torch_dtype.is_floating_point:
            tensors.append((torch.rand(shape, generator=generator, dtype=torch.float64) * 2 - 1).to(torch_dtype))
        else:
            tensors.append(torch.randint(-3, 4, shape, generator=generator, dtype=torch_dtype))
    return tensors


def prepare(case: Case, seed_value: int) -> Result | None:
    """Build, evaluate the reference, lower and shard; a Result if it ends here."""
    try:
        fd, _ = build(case.program)
        fusion_module = fd.to_module(every_value=True)
    except FusionDefinitionError as error:
        return case.result("invalid", "build", str(error))
    except Exception as error:  # noqa: BLE001 -- a frontend bug
        return case.result("crash", "build", *classify(error)[1:])
    inputs = global_inputs(case.program, torch.Generator().manual_seed(seed_value))
    try:  # the definition without its schedule: a schedule must not change values
        unscheduled = build(dataclasses.replace(case.program, schedule=[]))[0].to_module(every_value=True)
        case.expected = runtime.run_fusion(unscheduled, inputs)
    except Exception as error:  # noqa: BLE001 -- the eager semantics itself failed
        return case.result("crash", "reference", *classify(error)[1:])
    case.rounding = least_precise_dtype(fusion_module)
    case.reference_problem = _scheduled_reference_problem(case, fusion_module, inputs)
    if case.lowering.specialized:
        try:
            fusion_module = specialized(fusion_module, inputs)
        except Exception as error:  # noqa: BLE001
            outcome, message, where = classify(error)
            return case.result(outcome if outcome != "hang" else "crash", "lower", message, where)
    declared = fusion_module.body.block.first_op.function_type
    try:
        with _lowering_time_bound():
            case.module = lower_fusion(fusion_module.clone(),
                                       frozenset(case.disabled.split("+") if case.disabled else ()), case.lowering)
        case.text = str(case.module)
    except Exception as error:  # noqa: BLE001
        outcome, message, where = classify(error)
        return case.result(outcome if outcome != "hang" else "crash", "lower", message, where)
    # The caller's contract is the lowered signature: propagate-shardings gives tensors the
    # user left unannotated a mesh and a sharding; it must not change annotated ones.
    signature = find_function(case.module).function_type
    case.input_types, case.output_types = list(signature.inputs.data), list(signature.outputs.data)
    for kind, before, after in (("input", declared.inputs.data, case.input_types),
                                ("output", declared.outputs.data, case.output_types)):
        for i, (b, a) in enumerate(zip(before, after)):
            if is_annotated(b) and _caller_view(b) != _caller_view(a, b.mesh is None):
                return case.result("wrong", "lower", f"annotated {kind} {i} changed type from {b} to {a}")
    try:
        case.per_rank_inputs = [[runtime.shard_tensor(x, t, r) for x, t in zip(inputs, case.input_types)]
                                for r in range(case.world_size)]
    except Exception as error:  # noqa: BLE001
        return case.result("crash", "shard", *classify(error)[1:])
    return None


def specialized(fusion_module: ModuleOp, inputs: list[torch.Tensor]) -> ModuleOp:
    """The fusion specialized to the extents of `inputs` (`specialize-extents`)."""
    types = fusion_module.body.block.first_op.function_type.inputs.data
    extents = [e for t, x in zip(types, inputs) if isinstance(t, TensorType) for e in dynamic_extents(t, list(x.shape))]
    module = fusion_module.clone()
    SpecializeExtents(extents=tuple(extents)).apply(Context(), module)
    module.verify()
    return module


def _scheduled_reference_problem(case: Case, fusion_module: ModuleOp, inputs: list) -> str:
    """`runtime.run_fusion` on the scheduled fusion ignores shardings but not allocation
    orders: it must compute what the unscheduled one computes."""
    try:
        scheduled = runtime.run_fusion(fusion_module, inputs)
        for i, (got, want) in enumerate(zip(scheduled, case.expected)):
            _assert_close(got, want, f"eager output {i} of the scheduled fusion", case.rounding)
    except AssertionError as error:
        return f"runtime.run_fusion: {error}"
    except Exception as error:  # noqa: BLE001
        return f"runtime.run_fusion: {classify(error)[1]}"
    return ""


def _caller_view(t, placed_by_propagation: bool = False) -> tuple:
    """What a caller sees of a tensor type: mesh, value axes with their device pieces,
    layout (reduction axes are not part of the value; a Stream piece, which
    choose-pipelining may drop, says how the program computes the value, not where it
    lies). A tensor declared without a mesh gets its producers' from propagate-shardings:
    that mesh is no change."""
    mesh = None if placed_by_propagation else t.mesh
    return mesh, [(a.extent, _device_pieces(a)) for a in t.axes if not a.is_reduction], t.value_allocation_order()


def _device_pieces(axis) -> tuple:
    """An axis's pieces as its shards see them: device pieces, the others serial (none if
    no piece is a device piece)."""
    if not any(p.parallel.is_device for p in axis.pieces):
        return ()
    return tuple((p.extent, p.parallel if p.parallel.is_device else ParallelKind.SERIAL) for p in axis.pieces)


def needs_processes(module: ModuleOp) -> bool:
    """Whether the program communicates between ranks (else each rank runs on its own)."""
    return any((isinstance(op, hir.CollectiveOp) and op.team_size > 1) or isinstance(op, hir.PointToPointOp)
               for op in module.walk())


def uses_symmetric_memory(module: ModuleOp) -> bool:
    """Symmetric buffers are created collectively: such a program has no dry run."""
    return any(isinstance(op, hir.AllocateOp) and op.is_symmetric for op in module.walk())


# --------------------------------------------------------------------------- #
# Running in this process
# --------------------------------------------------------------------------- #


class DryRunCommunicator(Communicator):
    """A communicator that creates no process group and posts nothing: a rank's program
    compiles and runs its local work, with what collectives and receives would write
    filled with ones (left as allocated, an integer division by it could fail)."""

    backend = "dry-run"

    def create_groups(self, teams) -> None:
        pass

    def poster(self, op):
        return lambda input, output, *rest: _received(output)  # a shift's offset follows its buffers

    def point_to_point(self, op):
        return lambda buffer, peer: _received(buffer) if isinstance(op, hir.RecvOp) else DONE


def _received(buffer: torch.Tensor | None):
    if buffer is not None:
        buffer.fill_(1)
    return DONE


def run_here(case: Case, dry_run: bool) -> Result | list[list]:
    """Every rank's outputs, or the Result of the first rank that failed."""
    outputs = []
    for rank in range(case.world_size):
        phase = "compile"
        try:
            evaluator = runtime.compile_program(
                case.module, rank=rank, world_size=case.world_size, number_of_streams=case.program.number_of_streams,
                communicator=DryRunCommunicator(rank, case.world_size, torch.device("cpu")) if dry_run else None,
                unit_backend=None if dry_run else case.lowering.unit_backend)
            phase = "run"
            outputs.append(evaluator.run(case.per_rank_inputs[rank]))
        except Exception as error:  # noqa: BLE001
            outcome, message, where = classify(error)
            if isinstance(error, runtime.InputError):
                phase = "input"
            suffix = " (dry run: collectives not posted)" if dry_run and outcome != "refused" else ""
            return case.result(outcome, phase, f"rank {rank}: {message}{suffix}", where)
    return outputs


# --------------------------------------------------------------------------- #
# Running in spawned processes, many programs per launch
# --------------------------------------------------------------------------- #


def run_launches(cases: list[Case], world_size: int, log=lambda *_: None,
                 device: str = "cpu", deadline: float | None = None) -> dict[int, Result | list[list]]:
    """id(case) -> every rank's outputs, or the Result of a failure; one launch when
    nothing fails, one more per failing job. On `device` cuda, one GPU per rank. No launch
    starts after `deadline` (time.monotonic()): its cases are NOT_RUN."""
    done: dict[int, Result | list[list]] = {}
    per_launch = MAX_JOBS_PER_LAUNCH if deadline is None else min(MAX_JOBS_PER_LAUNCH, TIMED_JOBS_PER_LAUNCH)
    for start in range(0, len(cases), per_launch):
        if deadline is not None and time.monotonic() > deadline:
            log(f"time limit: {len(cases) - start} programs on {world_size} ranks not run")
            return done | {id(c): c.result(NOT_RUN, "spawn", "the profile's time limit passed first") for c in cases[start:]}
        done |= _run_until_clean(cases[start:start + per_launch], world_size, log, device)
    return done


def _job(case: Case, shift: int, device: str) -> runtime.Job:
    """The case as one job of a launch, its text shifted by `shift` lines (which names it
    in a diagnostic). On GPUs each program runs again after its first run (a graph's
    capture), so replays and the cross-run handshakes of symmetric buffers are checked;
    in the default graph mode until each of the two graphs that take turns is replayed.
    On CPU ranks a program that may use the copy engines runs twice (each run keeping the
    previous one's results, as `y = f(x)` in a loop): its symmetric buffers' cross-run
    handshake and the agreement on its result sets (runtime/result_sets.py) are checked."""
    graph = case.lowering.cuda_graph
    if device == "cpu":
        repeat = 1 if case.lowering.transport == "nccl" else 2
    else:
        repeat = 3 if graph else 5 if graph is None else 2
    return runtime.Job("\n" * shift + case.text, case.per_rank_inputs, name=None,
                       number_of_streams=case.program.number_of_streams, repeat=repeat,
                       cuda_graph=case.lowering.cuda_graph, unit_backend=case.lowering.unit_backend,
                       refusal_is_a_result=True)


def _run_until_clean(pending: list[Case], world_size: int, log=lambda *_: None,
                     device: str = "cpu") -> dict[int, Result | list[list]]:
    done: dict[int, Result | list[list]] = {}
    backend = "nccl" if device == "cuda" else "gloo"
    while pending:
        stride = max(c.text.count("\n") for c in pending) + 2
        jobs = [_job(c, k * stride, device) for k, c in enumerate(pending)]
        try:
            results = runtime.run_spmd_batch(jobs, world_size, backend=backend, timeout=120 + 2 * len(jobs),
                                             collective_timeout=COLLECTIVE_TIMEOUT, keep_progress=True)
        except runtime.SpmdError as error:
            message = str(error)
            log(f"launch of {len(pending)} programs on {world_size} ranks failed: {message[:300]}")
            culprit = _job_named_by(message, stride, len(pending))
            # The jobs every rank finished before the failure are done: go on after them.
            finished = min(len(error.completed), len(pending) if culprit is None else culprit)
            done |= _recorded(pending[:finished], error.completed, stride)
            pending, culprit = pending[finished:], None if culprit is None else culprit - finished
            if culprit is None and len(pending) > 1:  # no location: bisect
                half = len(pending) // 2
                return (done | _run_until_clean(pending[:half], world_size, log, device)
                        | _run_until_clean(pending[half:], world_size, log, device))
            case = pending.pop(culprit or 0)
            outcome, _, where = classify(error)
            done[id(case)] = case.result(outcome, "spawn", _unshifted(message, stride), where)
            continue
        done |= _recorded(pending, results, stride)
        pending = []
    return done


def _recorded(cases: list[Case], results: list[list], stride: int) -> dict[int, Result | list[list]]:
    """id(case) -> every rank's outputs, or its refusal (reached by every rank alike)."""
    recorded: dict[int, Result | list[list]] = {}
    for case, per_rank in zip(cases, results):
        refusal = next((r.refusal for r in per_rank if r.refusal is not None), None)
        recorded[id(case)] = ([r.outputs for r in per_rank] if refusal is None
                              else case.result("refused", "compile", _unshifted(refusal, stride), ""))
    return recorded


def _unshifted(message: str, stride: int) -> str:
    """The message with the line number its job's own text has."""
    return re.sub(r"<job>:(\d+):", lambda m: f"<job>:{(int(m.group(1)) - 1) % stride + 1}:", message)


def _job_named_by(message: str, stride: int, jobs: int) -> int | None:
    match = re.search(r"<job>:(\d+):\d+: error", message)
    if match is None:
        return None
    index = (int(match.group(1)) - 1) // stride
    return index if 0 <= index < jobs else None


# --------------------------------------------------------------------------- #
# Comparing
# --------------------------------------------------------------------------- #


def least_precise_dtype(module: ModuleOp) -> torch.dtype:
    """The floating type of least precision among the tensors of `module` (float64 if none)."""
    dtypes = {torch_dtype(t) for op in module.walk() for t in op.result_types if isinstance(t, TensorType)}
    return max((d for d in dtypes if d in TOLERANCES), key=lambda d: TOLERANCES[d], default=torch.float64)


def _assert_close(got: torch.Tensor, want: torch.Tensor, what: str, rounding: torch.dtype) -> None:
    if got.dtype != want.dtype:
        raise AssertionError(f"{what}: dtype {got.dtype}, expected {want.dtype}")
    if got.shape != want.shape:
        raise AssertionError(f"{what}: shape {list(got.shape)}, expected {list(want.shape)}")
    rtol, atol = TOLERANCES.get(want.dtype, (0, 0))
    if want.dtype.is_floating_point:
        rtol, atol = max((rtol, atol), TOLERANCES[rounding])
    finite = want[torch.isfinite(want)] if want.dtype.is_floating_point else want.new_zeros(0)
    scale = max(1.0, finite.abs().max().item()) if finite.numel() else 1.0
    torch.testing.assert_close(got, want, rtol=rtol, atol=atol * scale, equal_nan=True,
                               msg=lambda m: f"{what}: {m}")


def _assert_layout(got: torch.Tensor, t: TensorType, what: str) -> None:
    """`got` is laid out as its type says: dense in the type's allocation order (strides
    of extent-1 axes are free)."""
    order = t.value_allocation_order() or tuple(range(got.dim()))
    expected, step = [0] * got.dim(), 1
    for axis in reversed(order):
        expected[axis], step = step, step * got.shape[axis]
    if any(n > 1 and s != e for n, s, e in zip(got.shape, got.stride(), expected)):
        raise AssertionError(f"{what}: strides {list(got.stride())}, expected {expected} (allocation order {list(order)})")


def compare(case: Case, outputs: list[list]) -> Result:
    """Outputs of every rank against the reference: shapes per rank, the unsharded value,
    and every rank's own shard (replicas included, which unshard reads from one rank)."""
    try:
        for rank, local in enumerate(outputs):
            if len(local) != len(case.expected):
                raise AssertionError(f"rank {rank} returned {len(local)} outputs, expected {len(case.expected)}")
        for i, (out_type, want) in enumerate(zip(case.output_types, case.expected)):
            for rank, local in enumerate(outputs):
                if not out_type.is_on_rank(rank):
                    continue
                shape = logical_shape(out_type, rank)
                got = local[i]
                if not isinstance(got, torch.Tensor) or got.dim() != len(shape) or any(
                        e not in (DYNAMIC, g) for e, g in zip(shape, got.shape)):
                    got_shape = list(got.shape) if isinstance(got, torch.Tensor) else got
                    raise AssertionError(f"output {i} on rank {rank}: local shape {got_shape}, expected {list(shape)}")
            unsharded = runtime.unshard({r: local[i] for r, local in enumerate(outputs)}, out_type)
            _assert_close(unsharded, want, f"output {i} (unsharded)", case.rounding)
            for rank, local in enumerate(outputs):
                if out_type.is_on_rank(rank):
                    shard = runtime.shard_tensor(want, out_type, rank).to(want.dtype)  # in the type's layout
                    _assert_close(local[i], shard, f"output {i} on rank {rank}", case.rounding)
                    _assert_layout(local[i], out_type, f"output {i} on rank {rank}")
    except AssertionError as error:
        return case.result("wrong", "compare", str(error))
    except Exception as error:  # noqa: BLE001 -- unshard/shard_tensor could not read the outputs
        return case.result("crash", "compare", *classify(error)[1:])
    result = case.result("correct")
    result.note = _dtype_note(case)
    return result


def _dtype_note(case: Case) -> str:
    """Eager torch and the program agree, but not with the IR type (e.g. torch sums
    int32 into int64): not a wrong answer, a note."""
    for i, (out_type, want) in enumerate(zip(case.output_types, case.expected)):
        if want.dtype != torch_dtype(out_type):
            return f"output {i} is {want.dtype} in eager torch and the program, but its type says {torch_dtype(out_type)}"
    return ""


# --------------------------------------------------------------------------- #
# A whole run
# --------------------------------------------------------------------------- #


def draw_programs(count: int, seed_value: int, world_sizes: Sequence[int], strategy=programs) -> list[Program]:
    """`count` distinct programs from the strategy, reproducibly for a seed (hypothesis
    drives the draws; nothing fails inside, so it never shrinks). Hypothesis repeats
    simple programs early on: duplicates are dropped, so it draws more than `count`."""
    drawn: dict[str, Program] = {}

    @seed(seed_value)
    @settings(max_examples=count * 3 // 2 + 10, database=None, phases=[Phase.generate], deadline=None,
              suppress_health_check=list(HealthCheck))
    @given(strategy(tuple(world_sizes)))
    def collect(program: Program) -> None:
        if len(drawn) < count:
            drawn.setdefault(f"{program.world_size}\n{program.source()}", program)

    collect()
    return list(drawn.values())


def variants(programs_: list[Program], disable_every: int,
             lowerings: Sequence[Lowering] = (DEFAULT_LOWERING,)) -> list[Case]:
    """Every program through the whole pipeline with each of `lowerings`; every
    `disable_every`-th one also with each of DISABLED_VARIANTS (default lowering)."""
    cases = []
    for index, program in enumerate(programs_):
        cases.extend(Case(program, index, None, lowering) for lowering in lowerings)
        if disable_every and index % disable_every == disable_every - 1:
            cases.extend(Case(program, index, name) for name in DISABLED_VARIANTS)
    return cases


def run_cases(cases: list[Case], seed_value: int, log=lambda *_: None, device: str = "cpu",
              deadline: float | None = None) -> list[Result]:
    """Every case's result. On `device` cuda every program runs on spawned GPU ranks; no
    launch starts after `deadline` (time.monotonic())."""
    results: dict[int, Result] = {}
    to_launch: dict[int, list[Case]] = defaultdict(list)
    for number, case in enumerate(cases):
        if number and number % 500 == 0:
            log(f"prepared {number} of {len(cases)} cases")
        ended = prepare(case, seed_value * 100_003 + case.index)
        if ended is None:
            spawn = device == "cuda" or needs_processes(case.module)
            ran = [] if uses_symmetric_memory(case.module) else run_here(case, dry_run=spawn)
            if isinstance(ran, Result):
                ended = ran
            elif spawn:
                to_launch[case.world_size].append(case)
                continue
            else:
                ended = compare(case, ran)
        results[id(case)] = ended
    log(f"prepared {len(cases)} cases; launching {sum(map(len, to_launch.values()))} on spawned ranks")
    for world_size, batch in sorted(to_launch.items()):
        start = time.monotonic()
        for case_id, ran in run_launches(batch, world_size, log, device, deadline).items():
            case = next(c for c in batch if id(c) == case_id)
            results[case_id] = ran if isinstance(ran, Result) else compare(case, ran)
            results[case_id].communicated = results[case_id].outcome != NOT_RUN
        log(f"world size {world_size}: {len(batch)} programs in {time.monotonic() - start:.0f} s")
    return [_with_reference_problem(c, results[id(c)]) for c in cases]


def _with_reference_problem(case: Case, result: Result) -> Result:
    if case.reference_problem and result.outcome in ("correct", "refused"):
        ended = case.result("crash", "reference", case.reference_problem)
        ended.communicated = result.communicated
        return ended
    return result


def run_profile(count: int, seed_value: int, world_sizes: Sequence[int] = (1, 2, 4), disable_every: int = 5,
                log=lambda *_: None, lowerings: Sequence[Lowering] = (DEFAULT_LOWERING,), pipeline_count: int = 0,
                device: str = "cpu", time_limit: float = 0.0) -> list[Result]:
    """`count` random programs and `pipeline_count` tensor-parallel pipelines, each with
    every one of `lowerings`; with `time_limit` (seconds, 0: none), no launch starts after
    it (so a profile run under a device's time limit reports what ran)."""
    deadline = time.monotonic() + time_limit if time_limit > 0 else None
    drawn = draw_programs(count, seed_value, world_sizes) if count else []
    drawn += draw_programs(pipeline_count, seed_value, world_sizes, pipelines) if pipeline_count else []
    log(f"drew {len(drawn)} programs, {len(lowerings)} lowerings each")
    return run_cases(variants(drawn, disable_every, lowerings), seed_value, log, device, deadline)


# --------------------------------------------------------------------------- #
# Reporting
# --------------------------------------------------------------------------- #


def summary(results: list[Result]) -> str:
    lines = []
    for title, selected in (("whole pipeline", [r for r in results if r.disabled is None]),
                            ("variants with passes disabled", [r for r in results if r.disabled is not None])):
        if not selected:
            continue
        lines.append(f"{title}:")
        lines.append(f"  {'ranks':>5} {'programs':>8} " + " ".join(f"{o:>8}" for o in OUTCOMES)
                     + f" {'invalid':>8} {NOT_RUN:>8}")
        by_world = defaultdict(list)
        for r in selected:
            by_world[r.world_size].append(r)
        for world, rs in sorted(by_world.items()) + [("all", selected)]:
            counts = Counter(r.outcome for r in rs)
            programs_ = len(rs) - counts["invalid"] - counts[NOT_RUN]
            lines.append(f"  {world!s:>5} {programs_:>8} " + " ".join(f"{counts[o]:>8}" for o in OUTCOMES)
                         + f" {counts['invalid']:>8} {counts[NOT_RUN]:>8}")
    variants = [r for r in results if r.disabled is not None and r.outcome not in ("invalid", NOT_RUN)]
    if variants:
        lines.append("variants by disabled passes:")
        for name in DISABLED_VARIANTS:
            counts = Counter(r.outcome for r in variants if r.disabled == name)
            lines.append(f"  {name:<42} " + " ".join(f"{o} {counts[o]}" for o in OUTCOMES))
    whole = [r for r in results if r.disabled is None and r.outcome not in ("invalid", NOT_RUN)]
    lowerings = sorted({r.lowering for r in whole})
    if len(lowerings) > 1:
        lines.append("whole pipeline by lowering:")
        for name in lowerings:
            counts = Counter(r.outcome for r in whole if r.lowering == name)
            lines.append(f"  {name:<30} " + " ".join(f"{o} {counts[o]}" for o in OUTCOMES))
    communicated = [r for r in whole if r.communicated]
    lines.append(f"programs that communicated (ran on spawned ranks): {len(communicated)}, of which correct: "
                 f"{sum(r.outcome == 'correct' for r in communicated)}")
    refusals = Counter(f"[{r.phase}] {r.cause}" for r in whole if r.outcome == "refused")
    if refusals:
        lines.append(f"refusals by [phase] cause (whole pipeline, {sum(refusals.values())} of {len(whole)} programs "
                     f"= {100 * sum(refusals.values()) / max(len(whole), 1):.0f}%):")
        lines += [f"  {n:>5} {cause}" for cause, n in refusals.most_common()]
    covered = Counter(name for r in whole if r.outcome == "correct" for name in r.host_ops)
    lines.append("correct programs using each communication/stream op: "
                 + ", ".join(f"{name} {n}" for name, n in sorted(covered.items())))
    notes = Counter(reason_of(r.note) for r in results if r.note)
    if notes:
        lines.append("notes on correct runs:")
        lines += [f"  {n:>5} {note}" for note, n in notes.most_common()]
    failures = Counter((r.outcome, r.cause, r.where) for r in results if r.outcome in ("wrong", "crash", "hang"))
    if failures:
        lines.append("failures by signature (all variants):")
        lines += [f"  {n:>5} {outcome:<5} {where} {cause}" for (outcome, cause, where), n in failures.most_common()]
    return "\n".join(lines)


# --------------------------------------------------------------------------- #
# Shrinking a failure to a reproducer
# --------------------------------------------------------------------------- #


def signature(result: Result) -> tuple[str, str, str]:
    return result.outcome, result.where, result.cause


def run_in_process(program: Program, disabled: str | None, seed_value: int = 0) -> Result:
    """One variant, entirely in this process (collectives dry-run): what shrinking can
    afford to call hundreds of times. A failure that needs real collectives (a wrong
    answer or a crash in a communication) does not reproduce here."""
    case = Case(program, 0, disabled)
    ended = prepare(case, seed_value)
    if ended is None:
        dry_run = needs_processes(case.module)
        ran = run_here(case, dry_run)
        if isinstance(ran, Result):
            ended = ran
        else:  # the outputs of a dry run are not values: nothing to compare
            ended = case.result("unverified", "dry run") if dry_run else compare(case, ran)
    return _with_reference_problem(case, ended)


def shrink(result: Result, seed_value: int = 0) -> str | None:
    """Greedily drop source lines while the failure keeps its signature; the shortest
    source found, or None if the failure does not reproduce in this process."""
    def same_failure(source: str) -> bool:
        try:
            program = program_from_source(source, result.world_size)
            return signature(run_in_process(program, result.disabled, seed_value)) == signature(result)
        except Exception:  # noqa: BLE001 -- a dropped line broke the source
            return False

    lines = result.source.splitlines()
    if not same_failure("\n".join(lines)):
        return None
    shrunk = True
    while shrunk:
        shrunk = False
        for i in range(len(lines) - 1, 0, -1):  # never the `with` line
            candidate = lines[:i] + lines[i + 1:]
            if same_failure("\n".join(candidate)):
                lines, shrunk = candidate, True
    return "\n".join(lines)


def load_report(path: str) -> list[Result]:
    with open(path) as f:
        return [Result(**{k: v for k, v in r.items() if k != "cause"}) for r in json.load(f)]


def shrink_report(path: str, seed_value: int) -> int:
    """A shrunk reproducer for each failure signature of a report (its smallest example)."""
    results = load_report(path)
    groups: dict[tuple, list[Result]] = defaultdict(list)
    for r in results:
        if r.outcome in ("wrong", "crash", "hang"):
            groups[signature(r)].append(r)
    for key, members in sorted(groups.items(), key=lambda kv: -len(kv[1])):
        smallest = min(members, key=lambda r: (r.ops, len(r.source)))
        print(f"### {len(members)} x {key[0]} {key[1]} {key[2]}")
        print(f"# world size {smallest.world_size}, disabled pass: {smallest.disabled}; {smallest.message[:300]}")
        print(shrink(smallest, seed_value) or f"# (does not reproduce in-process; unshrunk)\n{smallest.source}")
        print()
    return 0


def replay(path: str, world_size: int, seed_value: int) -> int:
    """Run one reproducer through the whole pipeline and with each pass disabled; print
    each outcome (and, for a wrong answer, both tensors)."""
    with open(path) as f:
        program = program_from_source(f.read(), world_size)
    cases = [Case(program, 0, None)] + [Case(program, 0, name) for name in DISABLED_VARIANTS]
    for case, result in zip(cases, run_cases(cases, seed_value)):
        print(f"{case.disabled or 'whole pipeline'}: {result.outcome} {result.phase} {result.where}\n  {result.message}")
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--programs", type=int, default=300)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--ranks", default="1,2,4", type=world_sizes,
                        help=f"world sizes, comma-separated, among {', '.join(map(str, WORLD_SIZES))} (any with --replay)")
    parser.add_argument("--disable-every", type=int, default=5,
                        help="also run every N-th program with each pass disabled in turn (0: never)")
    parser.add_argument("--report", help="write every result as JSON here")
    parser.add_argument("--replay", help="run the program in this Python file (a reproducer) instead, on the "
                                         "one world size given by --ranks, with each pass disabled too")
    parser.add_argument("--shrink", help="print a shrunk reproducer for each failure signature of this report")
    parser.add_argument("--summarize", nargs="+", help="print the summary of these reports together")
    parser.add_argument("--pipelines", type=int, default=0,
                        help="also draw this many stream-pipelined tensor-parallel blocks (generator.pipelines)")
    parser.add_argument("--lowerings", choices=("default", "all"), default="default",
                        help="lower each program with the default options, or with every transport x bounded "
                             "intermediates (x CUDA graph on GPUs)")
    parser.add_argument("--device", choices=("cpu", "cuda"), default="cpu",
                        help="run on CPU ranks (gloo, stream hazards checked) or on one GPU per rank (NCCL)")
    parser.add_argument("--time-limit", type=float, default=0.0,
                        help="seconds after which no launch starts; its programs are reported as not run (0: none)")
    args = parser.parse_args(argv)
    if not args.replay and (undrawn := [size for size in args.ranks if size not in WORLD_SIZES]):
        parser.error(f"--ranks: no meshes drawn for {undrawn}; world sizes: {', '.join(map(str, WORLD_SIZES))}")
    if args.replay:
        return replay(args.replay, args.ranks[0], args.seed)
    if args.shrink:
        return shrink_report(args.shrink, args.seed)
    if args.summarize:
        print(summary([r for path in args.summarize for r in load_report(path)]))
        return 0
    lowerings = (DEFAULT_LOWERING,) if args.lowerings == "default" else GPU_LOWERINGS if args.device == "cuda" \
        else CPU_LOWERINGS
    results = run_profile(args.programs, args.seed, args.ranks, args.disable_every,
                          progress_log(), lowerings, args.pipelines, args.device, args.time_limit)
    if args.report:  # before anything is printed: a reader that stops reading loses no result
        with open(args.report, "w") as f:
            json.dump([asdict(r) | {"cause": r.cause} for r in results], f, indent=1)
    with contextlib.suppress(BrokenPipeError):
        print(summary(results), flush=True)
    return 0


def world_sizes(text: str) -> list[int]:
    """`--ranks`: positive world sizes."""
    try:
        sizes = [int(size) for size in text.split(",")]
    except ValueError:
        raise argparse.ArgumentTypeError(f"not comma-separated integers: {text!r}") from None
    if min(sizes) < 1:
        raise argparse.ArgumentTypeError(f"a world has at least one rank: {text!r}")
    return sizes


def progress_log() -> Callable[[str], None]:
    """Progress lines on stderr with the seconds since the run began; silent from the first
    line nobody reads (`... | head`), rather than ending the run there and losing its report."""
    start, reading = time.monotonic(), [True]

    def log(message: str) -> None:
        if reading[0]:
            try:
                print(f"[{time.monotonic() - start:6.0f} s] {message}", file=sys.stderr, flush=True)
            except BrokenPipeError:
                reading[0] = False

    return log


if __name__ == "__main__":
    sys.exit(main())
