"""What compiling a program shares: the compile context (this rank, its device, streams,
communicator...: fixed for the program), the function compiler that turns a function body
into the source of one Python function, and the emitters handlers use.

A handler `handler(c, op)` compiles one op with the function compiler `c` into lines of
Python (`c.emit`), or into none (a constant, a skipped op). Every SSA value is a local
variable of the generated function (`c.name`); every object the lines call (a kernel, a
stream pool's method, a communicator's poster...) is a global of the function's own
namespace (`c.bind`). A run so executes the program's torch calls one after the other, with
nothing between them: no dispatch on ops, no closure per op, no environment list.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from itertools import count
from types import TracebackType
from typing import Any

import torch
from xdsl.dialects import scf
from xdsl.ir import Block, Operation, SSAValue

from hostir_dialect import fusion, hir
from hostir_dialect.diagnostics import describe, op_error
from hostir_dialect.functions import FunctionLikeOp
from hostir_dialect.tensor_type import TensorType

from ..buffers import BufferUses
from ..communicator import CollectiveError, Communicator
from ..copy_engine import CopyEngineProgram
from ..hazards import Hazards, StreamHazard
from ..streams import CpuStreams, CudaStreams
from ..torch_ops import OpContext, copy_into
from ..trace import COMMUNICATION, COMPUTE, HOST, op_label

DEFAULT_NUMBER_OF_STREAMS = 4
"""`hir.number_of_streams` unless a run asks for another number (nvFuser's default too)."""

MAX_NUMBER_OF_STREAMS = 64
"""The most streams a run may ask for: `hir.stream %key` creates a stream for each key,
which is refused outside [0, number of streams), so a loop over 10**8 keys cannot create
10**8 streams."""

Handler = Callable[["FunctionCompiler", Any], None]

OUTLINING_DEPTH = 12
"""A loop or branch this many blocks deep becomes a function of its own: CPython compiles
at most 20 loops, `with`s and `try`s one inside another (and 100 indentation levels) in one
function, and an op of the deepest body adds a profiler range and a `try`."""


class ExecutionError(Exception):
    """A program failed while running; the message names the op (and its location)."""


class Unbound(ValueError):
    """An op read a value no op bound (reported at the op that read it)."""


_OPS_BY_LINE = "__hostir_ops_by_line__"
"""The global of a generated function's namespace mapping its line numbers to ops."""


class CompiledFunction:
    """A function body as one generated Python function, `run(*arguments) -> results`."""

    def __init__(self, name: str, source: str, run: Callable[..., tuple]):
        self.name = name
        self.source = source
        """The generated Python, for reading."""
        self.run = run

    def __call__(self, args: Sequence[Any], results: Sequence[Any] | None = None) -> list:
        """Run on `args`; `results`: the buffers of a program compiled with result
        buffers (`FunctionCompiler.function`)."""
        try:
            return list(self.run(*args) if results is None else self.run(*args, results=results))
        except ExecutionError:
            raise
        except Exception as error:
            op = failing_op(error.__traceback__)
            if op is None:  # not raised by an op (a wrong number of arguments)
                raise
            detail = str(error) if isinstance(error, (ValueError, CollectiveError, StreamHazard)) else f"{type(error).__name__}: {error}"
            raise ExecutionError(describe(op, f"failed: {detail}")) from error


def failing_op(traceback: TracebackType | None) -> Operation | None:
    """The op whose line raised: that of the innermost frame of a generated function (a
    unit's, when a post's unit failed)."""
    op = None
    while traceback is not None:
        ops_by_line = traceback.tb_frame.f_globals.get(_OPS_BY_LINE)
        if ops_by_line is not None:
            op = ops_by_line[traceback.tb_lineno]
        traceback = traceback.tb_next
    return op


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
    """When set: `(op name, stream id)` of every op that enqueues device work."""
    trace: bool = False
    """Run every hir and fusion op inside a profiler range named after the op."""
    trace_kinds: dict[str, str] = field(default_factory=dict)
    """In trace mode: each op's range name -> trace.COMMUNICATION, COMPUTE or HOST."""
    units: dict = field(default_factory=dict)
    """The `fusion.func` units of `hir.post_on_stream`, compiled once per way of being called."""
    hazards: Hazards | None = None
    """When set: every op's device work reports what it reads and writes (runtime/hazards.py)."""
    unit_backend: str = "eager"
    """How a `hir.post_on_stream` runs its unit: "eager" (op by op, one torch call each)
    or "compiled" (fused kernels, runtime/compile/unit_backends.py)."""
    program_buffers: BufferUses | None = None
    """What the program does with its buffers (for views a unit may return)."""
    manages_streams: bool = True
    """Whether the lines make the program's current stream torch's before device work (a
    unit compiled into fused kernels runs inside its post, which already did)."""

    def for_traced_units(self) -> CompileContext:
        """The context of a unit traced by torch.compile: plain torch calls only (no
        stream switches, stream log, hazard reports or profiler ranges, which its post
        makes)."""
        return dataclasses.replace(self, hazards=None, stream_log=None, trace=False, manages_streams=False, units={})

    @property
    def op_context(self) -> OpContext:
        return OpContext(self.rank, self.device)


_TERMINATORS = (hir.ReturnOp, fusion.ReturnOp, scf.YieldOp)
_FILE_NUMBERS = count()


def identifier(text: str) -> str:
    """`text` as the tail of a Python identifier, injectively: ASCII letters and digits
    are kept, `_` is doubled and any other character becomes `_x<hex>_`, so different
    symbol names never give the same function name. ASCII only: Python normalizes
    Unicode identifiers (NFKC: `ﬁ` is `fi`) and refuses some letters of `\\w` (`²`)."""
    return "".join(c if c.isascii() and c.isalnum() else "__" if c == "_" else f"_x{ord(c):x}_" for c in text)


@dataclass
class _Line:
    depth: int
    text: str
    op: Operation


class FunctionCompiler:
    """Compiles one function body into one Python function: every SSA value gets a local
    variable and every op its lines, through the handler registered for the op's class (or
    its nearest base class).
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
        self.names: dict[SSAValue, str] = {}
        self.variables: list[str] = []
        self.touched: dict[str, None] = {}
        """The variables the lines emitted since the enclosing outlined op began use, in order."""
        self.namespace: dict[str, Any] = {
            "_Unbound": Unbound, "_activate": context.streams.activate, "_streams": context.streams,
            "_log": context.stream_log, "_record": torch.profiler.record_function, "_hazards": context.hazards,
        }
        self.lines: list[_Line] = []
        self.depth = 0
        self.op_being_compiled: Operation | None = None
        self.destinations: dict[SSAValue, str] = {}
        """Unit results written straight into a post's `outs` (see `function`)."""
        self.loop_depth = 0
        """How many `scf.for` bodies enclose the op being compiled."""

    # -- names ----------------------------------------------------------------
    def name(self, value: SSAValue) -> str:
        """The variable (or, for a constant, the global) holding `value`."""
        name = self.names.get(value)
        if name is None:
            hint = identifier(value.name_hint) if value.name_hint else ""
            name = self.names[value] = f"v{len(self.names)}_{hint}"
            self.variables.append(name)
        if name[0] == "v":  # a variable, not a constant's global (`bind`'s names start with "_")
            self.touched[name] = None
        return name

    def constant(self, value: SSAValue, python_value: Any) -> None:
        self.names[value] = self.bind(python_value, "k")

    def bind(self, obj: Any, hint: str = "f") -> str:
        """A global of the generated function holding `obj`."""
        name = f"_{hint}{len(self.namespace)}"
        self.namespace[name] = obj
        return name

    def names_of(self, values: Sequence[SSAValue]) -> str:
        return ", ".join(map(self.name, values))

    def on_rank(self, values: Sequence[SSAValue]) -> bool:
        return all(v.type.is_on_rank(self.rank) for v in values if isinstance(v.type, TensorType))

    # -- lines ----------------------------------------------------------------
    def emit(self, *lines: str) -> None:
        """Lines of the op being compiled, at the current depth."""
        for text in lines:
            self.lines.append(_Line(self.depth, text, self.op_being_compiled))  # type: ignore[arg-type]  # emit runs while an op is compiled

    @contextmanager
    def nested(self) -> Iterator[None]:
        """Lines one block deeper (a loop body, a branch)."""
        self.depth += 1
        try:
            yield
        finally:
            self.depth -= 1

    def emit_block(self, block: Block) -> None:
        """The block's ops, one level deeper (`pass` where they emit nothing)."""
        with self.nested():
            start = len(self.lines)
            self.block(block)
            if len(self.lines) == start:
                self.emit("pass")

    def assign(self, targets: Sequence[str], sources: Sequence[str]) -> None:
        """`targets = sources` at once (a swap of loop-carried values stays a swap)."""
        if targets:
            self.emit(f"{', '.join(targets)}, = {', '.join(sources)},")

    def record_accesses(self, op: Operation, reads: Sequence[SSAValue], writes: Sequence[SSAValue]) -> None:
        """With the hazard check on: the op's work reads `reads` and writes `writes` on the
        current stream (after the op's lines, which bind the values written)."""
        if self.context.hazards is None:
            return
        self.emit(f"_hazards.touch({self.bind(op, 'op')}, ({''.join(self.name(v) + ', ' for v in reads)}), "
                  f"({''.join(self.name(v) + ', ' for v in writes)}))")

    def record_free(self, op: Operation, buffer: SSAValue) -> None:
        """With the hazard check on: the op hands `buffer`'s memory back on the current stream."""
        if self.context.hazards is not None:
            self.emit(f"_hazards.free(_hazards.current_stream(), {self.bind(op, 'op')}, {self.name(buffer)})")

    # -- refusals (every rank alike, from the types, before deciding whether it takes part) --
    def refuse_unlowered(self, op: Operation, values: Sequence[SSAValue]) -> None:
        """Tensors with and without a device mesh meet only where propagate-shardings and
        finalize-multidevice-domains did not run: a mesh-less tensor is on every rank,
        the others only on their mesh's, so computing it would need a communication."""
        meshes = [v.type.mesh is not None for v in values if isinstance(v.type, TensorType)]
        if any(meshes) and not all(meshes):
            raise op_error(op, "mixes tensors with and without a device mesh, which needs a communication; "
                               "run the hostir-lower pipeline first")

    def refuse_one_chunk(self, op: Operation, values: Sequence[SSAValue]) -> None:
        """A stream-allocated type (`alloc=[0 stream, ..]`) holds one chunk: only a buffer
        allocated in a stream loop realizes it, never a whole value computed at once."""
        for value in values:
            if self.local and isinstance(value.type, TensorType) and value.type.stream_allocated:
                raise op_error(op, f"{value.type} is allocated one stream chunk at a time, which only a stream loop "
                                   "realizes; run stream-parallel-type first")

    # -- structure --------------------------------------------------------------
    def function(self, func: FunctionLikeOp, outs: int = 0, direct: bool = False,
                 result_buffers: bool = False) -> CompiledFunction:
        """Compile a function; with `outs` > 0 its results go into that many extra
        arguments (directly when `direct`, else by a final copy). With `result_buffers`
        (a host program) it also takes `results`, None or one buffer per result (None
        where this rank holds none): a result its program allocates is allocated in its
        buffer, any other is copied into it, and the run returns the buffers."""
        block = func.body.block
        arguments = [self.name(a) for a in block.args]
        assert block.last_op is not None, "a verified function ends with its return"
        returned = list(block.last_op.operands)
        out_names = [f"out{k}" for k in range(outs)]
        if direct:
            for value, out in zip(returned, out_names):
                if isinstance(value.owner, fusion.ComputeOp) and value.owner.out is None and returned.count(value) == 1:
                    self.destinations[value] = out
        allocated = _allocated_results(block) if result_buffers else {}
        with self.nested():
            for position, value in allocated.items():
                self.emit(f"if results is not None: {self.name(value)} = results[{position}]")
            self.block(block, release_dead=isinstance(func, fusion.FuncOp))
            self.op_being_compiled = block.last_op
            for value, out in zip(returned, out_names):
                if self.destinations.get(value) != out:
                    self.emit(f"{self.bind(copy_into, 'copy_into')}({out}, {self.name(value)})")
            if result_buffers:
                self.fill_result_buffers([(k, v) for k, v in enumerate(returned) if k not in allocated])
            self.emit(f"return ({''.join(r + ', ' for r in out_names or map(self.name, returned))})")
        arguments += out_names
        unbound = [v for v in self.variables if v not in arguments]
        if result_buffers:
            arguments.append("results=None")
        return self.generated(func.sym_name.data, arguments, unbound, self.namespace)

    def fill_result_buffers(self, copied: list[tuple[int, SSAValue]]) -> None:
        """Copy the results the program does not allocate into their buffers (on the
        program's current stream), and return the buffers."""
        if copied:
            self.emit("if results is not None:")
            with self.nested():
                start = len(self.lines)
                copy = self.bind(copy_into, "copy_into")
                for position, value in copied:
                    if _is_symmetric_allocation(value):  # the result set's own buffer (runtime/result_sets.py)
                        self.emit(f"results[{position}] = {self.name(value)}")
                    else:
                        self.emit(f"if results[{position}] is not None: {copy}(results[{position}], {self.name(value)})")
                self.on_current_stream(self.op_being_compiled, start)  # type: ignore[arg-type]  # the terminator
        self.emit("if results is not None: return tuple(results)")

    def generated(self, name: str, arguments: list[str], unbound: list[str], namespace: dict) -> CompiledFunction:
        """The Python function of the emitted lines, in `namespace`; `unbound` variables
        start as None."""
        function_name = "hostir_" + identifier(name)
        header = [f"def {function_name}({', '.join(arguments)}):"]
        if unbound:
            header.append(f"    {' = '.join(unbound)} = None")
        body = ["    " * line.depth + line.text for line in self.lines]
        source = "\n".join([*header, *body]) + "\n"
        namespace[_OPS_BY_LINE] = [None] * (len(header) + 1) + [line.op for line in self.lines]
        exec(compile(source, f"<hostir @{ascii(name)[1:-1]} {next(_FILE_NUMBERS)}>", "exec"), namespace)
        return CompiledFunction(name, source, namespace[function_name])

    def outlined(self, op: Operation, handler: Handler) -> None:
        """The op's lines as a function of their own, which takes and returns every
        variable they use (a buffer they allocate stays allocated for the next call)."""
        enclosing = self.lines, self.depth, self.touched
        self.lines, self.depth, self.touched = [], 1, {}
        handler(self, op)
        used = list(self.touched)
        self.emit(f"return ({''.join(v + ', ' for v in used)})")
        function = self.generated(f"{op.name}_{len(self.namespace)}", used, [], dict(self.namespace))
        self.lines, self.depth, self.touched = enclosing
        self.touched.update(dict.fromkeys(used))
        call = f"{self.bind(function.run, 'outlined')}({', '.join(used)})"
        self.emit(f"{', '.join(used)}, = {call}" if used else call)

    def block(self, block: Block, release_dead: bool = False) -> None:
        """The block's ops; with `release_dead`, each value's variable is cleared after its
        last use, so that a long fusion (an eager reference) holds only its live values.
        Only for fusions: a host program's buffers live until their `hir.deallocate`."""
        dead_after = _dead_after(block) if release_dead else {}
        for op in block.ops:
            if not isinstance(op, _TERMINATORS):
                self.op(op)
                self.release(dead_after.get(op, ()))

    def release(self, values: Sequence[SSAValue]) -> None:
        variables = [self.names[v] for v in values
                     if v in self.names and self.names[v][0] == "v" and v not in self.destinations]
        if variables:
            self.emit(f"{' = '.join(variables)} = None")

    def op(self, op: Operation) -> None:
        handler = next((self.handlers[cls] for cls in type(op).__mro__ if cls in self.handlers), None)
        if handler is None:
            raise op_error(op, "is not supported by the runtime")
        enclosing, self.op_being_compiled = self.op_being_compiled, op
        start = len(self.lines)
        if op.regions and self.depth >= OUTLINING_DEPTH:
            self.outlined(op, handler)
        else:
            handler(self, op)
        if self.context.trace and op.dialect_name() in ("hir", "fusion") and len(self.lines) > start:
            self.labelled(op, start)
        self.op_being_compiled = enclosing

    def labelled(self, op: Operation, start: int) -> None:
        """The op's lines from `start` on inside a profiler range named after the op (trace mode)."""
        label = op_label(op)
        self.context.trace_kinds[label] = _kind(op)
        for line in self.lines[start:]:
            line.depth += 1
        self.lines.insert(start, _Line(self.depth, f"with _record({label!r}):", op))

    def on_current_stream(self, op: Operation, start: int) -> None:
        """Before the op's lines from `start` on (device work, or an allocation, which
        binds memory to a stream): make the program's current stream torch's. In
        stream-recording mode, log that stream."""
        if len(self.lines) == start or not self.context.manages_streams:
            return
        depth = self.lines[start].depth
        activate = [_Line(depth, "_activate()", op)]
        if self.context.stream_log is not None:
            activate.append(_Line(depth, f"_log.append(({op.name!r}, _streams.stream_id(_streams.active)))", op))
        self.lines[start:start] = activate


def _is_symmetric_allocation(value: SSAValue) -> bool:
    return isinstance(value.owner, hir.AllocateOp) and value.owner.is_symmetric


def _allocated_results(block: Block) -> dict[int, SSAValue]:
    """The results that a `hir.allocate` of the function's own block binds, by their
    first position among the results (a buffer passed for such a result is bound to the
    allocation, which then allocates nothing). Symmetric buffers are created with the
    program, never passed in."""
    assert block.last_op is not None
    allocated: dict[int, SSAValue] = {}
    for position, value in enumerate(block.last_op.operands):
        owner = value.owner
        if (isinstance(owner, hir.AllocateOp) and owner.parent_block() is block and not owner.is_symmetric
                and value not in allocated.values()):
            allocated[position] = value
    return allocated


def _dead_after(block: Block) -> dict[Operation, list[SSAValue]]:
    """For each op of `block`, the values computed in it that nothing after that op reads
    (a value read inside a nested region counts as read by the op holding that region);
    the terminator's operands are never dead."""
    dead_after: dict[Operation, list[SSAValue]] = {}
    returned = set(block.last_op.operands) if block.last_op is not None else set()
    order = {op: k for k, op in enumerate(block.ops)}
    for op in block.ops:
        for value in op.results:
            if value in returned:
                continue
            users = [block.find_ancestor_op_in_block(use.operation) for use in value.uses]
            last = max((u for u in users if u is not None), key=order.__getitem__, default=op)
            dead_after.setdefault(last, []).append(value)
    return dead_after


def on_current_stream(handler: Handler) -> Handler:
    """The handler of ops that enqueue device work (`FunctionCompiler.on_current_stream`)."""

    def compile_on_current_stream(c: FunctionCompiler, op: Operation) -> None:
        start = len(c.lines)
        handler(c, op)
        c.on_current_stream(op, start)

    return compile_on_current_stream


def _kind(op: Operation) -> str:
    if isinstance(op, (hir.CollectiveOp, hir.PointToPointOp, hir.WaitOp)):
        return COMMUNICATION
    if isinstance(op, (fusion.ComputeOp, hir.PostOnStreamOp)):
        return COMPUTE
    return HOST


# --------------------------------------------------------------------------- #
# Emitters
# --------------------------------------------------------------------------- #


def emit_call(c: FunctionCompiler, f: Callable, result: SSAValue, args: Sequence[SSAValue]) -> None:
    """result = f(*args)."""
    c.emit(f"{c.name(result)} = {c.bind(f)}({c.names_of(args)})")


def emit_call_into(c: FunctionCompiler, f: Callable, result: SSAValue, dest: str, args: Sequence[SSAValue],
                   dest_name: str) -> None:
    """result = f(dest, *args), refusing an unbound destination."""
    c.emit(f"if {dest} is None: raise _Unbound({f'destination {dest_name} is not bound (allocate it first)'!r})",
           f"{c.name(result)} = {c.bind(f)}({', '.join([dest, *map(c.name, args)])})")


def value_name(value: SSAValue) -> str:
    return f"%{value.name_hint}" if value.name_hint else "its destination"
