"""What compiling a program shares: the compile context (this rank, its device, streams,
communicator...: fixed for the program), the function compiler that gives values slots and
dispatches ops to their dialect's handler, and the step builders handlers use.

A handler `handler(c, op)` compiles one op with the function compiler `c` into a step (a
closure over the slot environment `env`) or into nothing (a constant slot, a skipped op).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import torch
from xdsl.dialects import scf
from xdsl.ir import Block, Operation, SSAValue

from hostir_dialect import fusion, hir
from hostir_dialect.diagnostics import describe, op_error
from hostir_dialect.functions import FunctionLikeOp
from hostir_dialect.tensor_type import TensorType

from ..communicator import CollectiveError, Communicator
from ..copy_engine import CopyEngineProgram
from ..streams import CpuStreams, CudaStreams
from ..torch_ops import OpContext, copy_into
from ..trace import COMMUNICATION, COMPUTE, HOST, op_label

DEFAULT_NUMBER_OF_STREAMS = 4
"""`hir.number_of_streams` unless a run asks for another number (nvFuser's default too)."""

Step = Callable[[list], None]
Handler = Callable[["FunctionCompiler", Any], "Step | None"]


class ExecutionError(Exception):
    """A program failed while running; the message names the op (and its location)."""


class Unbound(ValueError):
    """A step read a value no step bound (reported at the op that read it)."""


def run_steps(steps: Sequence[Step], ops: Sequence[Operation], env: list) -> None:
    index = 0
    try:
        for index, step in enumerate(steps):  # noqa: B007 -- `index` names the failing op
            step(env)
    except ExecutionError:
        raise
    except Exception as error:
        detail = str(error) if isinstance(error, (ValueError, CollectiveError)) else f"{type(error).__name__}: {error}"
        raise ExecutionError(describe(ops[index], f"failed: {detail}")) from error


class CompiledFunction:
    """A function body as closures over a slot environment."""

    def __init__(self, name: str, template: list, arg_slots: list[int], steps: list[Step],
                 ops: list[Operation], result_slots: list[int]):
        self.name = name
        self.template = template
        self.arg_slots = arg_slots
        self.steps = steps
        self.ops = ops
        self.result_slots = result_slots

    def __call__(self, args: Sequence[Any]) -> list:
        env = self.template.copy()
        for slot, value in zip(self.arg_slots, args):
            env[slot] = value
        run_steps(self.steps, self.ops, env)
        return [env[s] for s in self.result_slots]


@dataclass
class CompileContext:
    """What every handler of a program may know, fixed when the program is compiled.
    `local`: host-program semantics on this rank's shards (False: the reference semantics
    of a `fusion.func` on global tensors, `rank` None)."""

    local: bool
    rank: int | None
    device: torch.device
    streams: CpuStreams | CudaStreams
    number_of_streams: int = DEFAULT_NUMBER_OF_STREAMS
    comm: Communicator | None = None
    copy_engine: CopyEngineProgram | None = None
    stream_log: list[tuple[str, int]] | None = None
    """When set: `(op name, stream id)` of every step that enqueues device work."""
    trace: bool = False
    """Run every hir and fusion op's step inside a profiler range named after the op."""
    trace_kinds: dict[str, str] = field(default_factory=dict)
    """In trace mode: each op's range name -> trace.COMMUNICATION, COMPUTE or HOST."""
    units: dict = field(default_factory=dict)
    """The `fusion.func` units of `hir.post_on_stream`, compiled once per way of being called."""

    @property
    def op_context(self) -> OpContext:
        return OpContext(self.rank, self.device)


_TERMINATORS = (hir.ReturnOp, fusion.ReturnOp, scf.YieldOp)


class FunctionCompiler:
    """Compiles one function body: gives every SSA value a slot and every op a step, through
    the handler registered for the op's class (or its nearest base class).
    `may_view(value)`: whether `value` may share its buffer with another value (nothing
    writes either, see `BufferUses.immutable`), so that an op computing a view of its input
    (a broadcast, a permute, a set...) need not copy it."""

    def __init__(self, context: CompileContext, handlers: Mapping[type[Operation], Handler],
                 may_view: Callable[[SSAValue], bool]):
        self.context = context
        self.handlers = handlers
        self.may_view = may_view
        self.local = context.local
        self.rank = context.rank
        self.op_context = context.op_context
        self.slots: dict[SSAValue, int] = {}
        self.template: list = []
        self.destinations: dict[SSAValue, int] = {}
        """Unit results written straight into a post's `outs` (see `function`)."""

    # -- slots ----------------------------------------------------------------
    def slot(self, value: SSAValue) -> int:
        index = self.slots.get(value)
        if index is None:
            index = self.slots[value] = len(self.template)
            self.template.append(None)
        return index

    def constant(self, value: SSAValue, python_value: Any) -> None:
        self.template[self.slot(value)] = python_value

    def on_rank(self, values: Sequence[SSAValue]) -> bool:
        return all(v.type.is_on_rank(self.rank) for v in values if isinstance(v.type, TensorType))

    # -- structure --------------------------------------------------------------
    def function(self, func: FunctionLikeOp, outs: int = 0, direct: bool = False) -> CompiledFunction:
        """Compile a function; with `outs` > 0 its results go into that many extra
        arguments (directly when `direct`, else by a final copy)."""
        block = func.body.block
        arg_slots = [self.slot(a) for a in block.args]
        returned = list(block.last_op.operands)
        out_slots = [len(self.template) + k for k in range(outs)]
        self.template.extend([None] * outs)
        if direct:
            for value, out in zip(returned, out_slots):
                if isinstance(value.owner, fusion.ComputeOp) and value.owner.out is None and returned.count(value) == 1:
                    self.destinations[value] = out
        steps, ops = self.block(block)
        for value, out in zip(returned, out_slots):
            if self.destinations.get(value) != out:
                steps.append(_copy_step(self.slot(value), out))
                ops.append(block.last_op)
        result_slots = out_slots or [self.slot(v) for v in returned]
        return CompiledFunction(func.sym_name.data, self.template, arg_slots + out_slots, steps, ops, result_slots)

    def block(self, block: Block) -> tuple[list[Step], list[Operation]]:
        steps: list[Step] = []
        ops: list[Operation] = []
        for op in block.ops:
            if isinstance(op, _TERMINATORS):
                continue
            step = self.op(op)
            if step is not None:
                steps.append(step)
                ops.append(op)
        return steps, ops

    def op(self, op: Operation) -> Step | None:
        handler = next((self.handlers[cls] for cls in type(op).__mro__ if cls in self.handlers), None)
        if handler is None:
            raise op_error(op, "is not supported by the runtime")
        step = handler(self, op)
        if step is None or not self.context.trace or op.dialect_name() not in ("hir", "fusion"):
            return step
        return self.labelled(op, step)

    def labelled(self, op: Operation, step: Step) -> Step:
        """The step inside a profiler range named after the op (trace mode)."""
        label = op_label(op)
        self.context.trace_kinds[label] = _kind(op)
        record = torch.profiler.record_function

        def run(env: list) -> None:
            with record(label):
                step(env)

        return run

    def on_current_stream(self, op: Operation, step: Step | None) -> Step | None:
        """The step of an op that enqueues device work (or allocates, which binds memory to
        a stream): it makes the program's current stream torch's first. In stream-recording
        mode, it logs that stream."""
        if step is None:
            return None
        streams, log = self.context.streams, self.context.stream_log
        activate = streams.activate
        if log is None:
            def on_current_stream(env: list) -> None:
                activate()
                step(env)

            return on_current_stream
        name = op.name

        def logged(env: list) -> None:
            activate()
            log.append((name, streams.stream_id(streams.active)))
            step(env)

        return logged


def on_current_stream(handler: Handler) -> Handler:
    """The handler of ops whose steps enqueue device work (`FunctionCompiler.on_current_stream`)."""

    def compile_on_current_stream(c: FunctionCompiler, op: Operation) -> Step | None:
        return c.on_current_stream(op, handler(c, op))

    return compile_on_current_stream


def _kind(op: Operation) -> str:
    if isinstance(op, (hir.CollectiveOp, hir.PointToPointOp, hir.WaitOp)):
        return COMMUNICATION
    if isinstance(op, (fusion.ComputeOp, hir.PostOnStreamOp)):
        return COMPUTE
    return HOST


# --------------------------------------------------------------------------- #
# Step builders
# --------------------------------------------------------------------------- #


def fresh_step(f: Callable, result: int, args: list[int]) -> Step:
    """env[result] = f(*env[args])."""
    if len(args) == 1:
        (a,) = args

        def step(env: list) -> None:
            env[result] = f(env[a])
    elif len(args) == 2:
        a, b = args

        def step(env: list) -> None:
            env[result] = f(env[a], env[b])
    else:
        def step(env: list) -> None:
            env[result] = f(*[env[s] for s in args])
    return step


def into_step(f: Callable, result: int, dest: int, args: list[int], dest_name: str) -> Step:
    """env[result] = f(env[dest], *env[args]), refusing an unbound destination."""
    message = f"destination {dest_name} is not bound (allocate it first)"
    if len(args) == 1:
        (a,) = args

        def step(env: list) -> None:
            out = env[dest]
            if out is None:
                raise Unbound(message)
            env[result] = f(out, env[a])
    elif len(args) == 2:
        a, b = args

        def step(env: list) -> None:
            out = env[dest]
            if out is None:
                raise Unbound(message)
            env[result] = f(out, env[a], env[b])
    else:
        def step(env: list) -> None:
            out = env[dest]
            if out is None:
                raise Unbound(message)
            env[result] = f(out, *[env[s] for s in args])
    return step


def _copy_step(source: int, dest: int) -> Step:
    def step(env: list) -> None:
        copy_into(env[dest], env[source])

    return step


def value_name(value: SSAValue) -> str:
    return f"%{value.name_hint}" if value.name_hint else "its destination"
