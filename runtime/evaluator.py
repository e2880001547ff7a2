"""The evaluator: a `hir.program` (one rank's host program) or a `fusion.func` (the eager
reference semantics) compiled ONCE into a flat list of Python closures, then run many times.

Compilation gives every SSA value an integer slot in an environment list; a run copies a
template of that list (constants and run parameters are already in it), binds the inputs
and calls each closure with the list. Nothing at run time dispatches on op names or reads
xDSL attributes: every such decision (which torch function, which slots, which process
group, whether this rank takes part at all) is made while compiling. An `scf.for` becomes a
closure that runs its body's closure list each iteration, so values derived from the loop
index are simply recomputed.

Binding rules (nvFuser's HostIrEvaluator, csrc/host_ir/evaluator.cpp):
- `hir.allocate` binds a new local buffer (`TensorType.local_shape(rank)`, dense in
  allocation order) unless its value is already bound; on a rank outside the type's mesh
  it binds nothing (None).
- A compute op with a destination writes into it (`out=` / `copy_`) and its result aliases
  it; without one it computes a fresh tensor that aliases none of its operands.
- `hir.alias_select` binds a view (`select` on the torch dim of the logical axis, index 0 on
  a broadcast axis); `hir.deallocate` drops the binding.
- `hir.post_on_stream` runs its `fusion.func` unit (compiled once) into the `outs` buffers,
  or into fresh tensors when it has none.
- A compute op or post whose tensors' meshes do not contain this rank is skipped (its
  results stay None); so is a collective whose team does not contain it (its work is DONE).
Safety: a compute op that still needs a communication (`communicates`: it reshards
or reduces a sharded axis) is refused when a host program is compiled: it was not lowered,
and running it on local shards would compute a wrong answer.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable, Sequence
from typing import Any

import torch
from xdsl.dialects import arith, scf
from xdsl.dialects.builtin import FloatAttr, IntegerAttr, IntegerType, ModuleOp
from xdsl.ir import Block, Operation, SSAValue

from hostir_dialect import fusion, hir, symbols
from hostir_dialect.diagnostics import describe, op_error
from hostir_dialect.functions import FunctionLikeOp
from hostir_dialect.sharding import communicates
from hostir_dialect.tensor_type import DYNAMIC, ParallelKind, TensorType, tensor_type

from .communicator import DONE, CollectiveError, Communicator
from .copy_engine import CopyEngineProgram
from .layouts import empty_buffer, flatten_in_allocation_order, logical_shape, torch_dtype, value_alloc_perm
from .streams import make_streams
from .torch_ops import OpContext, UnsupportedOp, build_kernel, copy_into


class ExecutionError(Exception):
    """A program failed while running; the message names the op (and its location)."""


class InputError(ExecutionError):
    """The inputs given to a program do not match its signature; nothing was run."""


Step = Callable[[list], None]


def _run(steps: Sequence[Step], ops: Sequence[Operation], env: list) -> None:
    index = 0
    try:
        for index, step in enumerate(steps):  # noqa: B007 -- `index` names the failing op
            step(env)
    except ExecutionError:
        raise
    except Exception as error:
        detail = str(error) if isinstance(error, (ValueError, CollectiveError)) else f"{type(error).__name__}: {error}"
        raise ExecutionError(describe(ops[index], f"failed: {detail}")) from error


# --------------------------------------------------------------------------- #
# Compiled functions
# --------------------------------------------------------------------------- #


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
        _run(self.steps, self.ops, env)
        return [env[s] for s in self.result_slots]


_RESIZE_WARNING = "An output with one or more elements was resized"
"""torch resizes a wrongly shaped `out=` tensor with only a warning: for us it is an error."""


class Evaluator:
    """A `hir.program` or `fusion.func` of `module`, compiled once for this rank.

    For a `hir.program`: `rank`/`world_size` default to the initialized torch.distributed
    world (else 0 of 1); every rank must construct its evaluators in the same order (the
    process groups of the program's teams are created here, collectively). A `fusion.func`
    runs with the eager reference semantics on global (unsharded) tensors.
    `record_streams`: log `(op name, stream id)` for every op that enqueues device work.
    """

    def __init__(self, module: ModuleOp, *, name: str | None = None, rank: int | None = None,
                 world_size: int | None = None, number_of_streams: int = 4, device: torch.device | str | None = None,
                 communicator: Communicator | None = None, record_streams: bool = False):
        if not isinstance(module, ModuleOp):
            raise TypeError(f"expected a ModuleOp (parse IR text with hostir_dialect.parse_module), got {module!r}")
        self.function = find_function(module, name)
        self.is_program = isinstance(self.function, hir.ProgramOp)
        device = _device(device) if device is not None else None
        if self.is_program:
            self.comm = communicator or Communicator.for_current_process(rank, world_size, device)
            self.rank: int | None = self.comm.rank
            self.device = self.comm.device
            self.comm.create_groups(program_teams(self.function, self.comm))
            self.copy_engine = self._copy_engine(self.function)
        else:
            self.comm = None
            self.rank = None
            self.device = device or torch.device("cpu")
            self.copy_engine = None
        if number_of_streams < 1:
            raise ValueError(f"number_of_streams must be at least 1, got {number_of_streams}")
        self.number_of_streams = number_of_streams
        self.streams = make_streams(self.device)
        self.stream_log: list[tuple[str, int]] | None = [] if record_streams else None
        compiler = _Compiler(self, local=self.is_program)
        self.compiled = compiler.function(self.function)
        self._arg_specs = [_ArgSpec.of(arg, self.rank) for arg in self.function.args]

    def _copy_engine(self, program: hir.ProgramOp) -> CopyEngineProgram | None:
        """The program's symmetric buffers and flags, if it has any (created collectively)."""
        if not any(isinstance(op, hir.AllocateOp) and op.is_symmetric for op in program.walk()):
            return None
        timeout = self.comm.timeout.total_seconds() if self.comm.timeout else 60.0
        return CopyEngineProgram(program, self.comm.rank, self.comm.device, self.comm.group, timeout)

    @property
    def name(self) -> str:
        return self.function.sym_name.data

    def run(self, inputs: Sequence[Any]) -> list:
        """Run once on this rank's inputs (local shards; None where the rank holds none)."""
        self.check_inputs(inputs)
        if self.copy_engine is not None:
            self.copy_engine.begin_run()
        saved = self.streams.current()
        try:
            with warnings.catch_warnings():
                warnings.filterwarnings("error", message=_RESIZE_WARNING)
                return self.compiled(inputs)
        finally:
            self.streams.set_current(saved)

    def check_inputs(self, inputs: Sequence[Any]) -> None:
        if len(inputs) != len(self._arg_specs):
            raise InputError(f"@{self.name} takes {len(self._arg_specs)} inputs, got {len(inputs)}")
        for index, (spec, value) in enumerate(zip(self._arg_specs, inputs)):
            problem = spec.problem(value, self.device)
            if problem:
                raise InputError(f"@{self.name} argument {index} ({spec.label}): {problem}")


def _device(device: torch.device | str) -> torch.device:
    """A torch device this process can use."""
    try:
        device = torch.device(device)
    except RuntimeError:
        raise ValueError(f"invalid device {device!r}; use 'cpu', 'cuda' or 'cuda:N'") from None
    if device.type == "cuda" and not torch.cuda.is_available():
        raise ValueError(f"device {str(device)!r} requested but CUDA is not available here")
    return device


def compile_program(module: ModuleOp, **options) -> Evaluator:
    """`Evaluator(module, **options)`: compile once, then call `.run(inputs)` many times."""
    return Evaluator(module, **options)


def execute(module: ModuleOp, inputs: Sequence[Any], *, name: str | None = None, rank: int | None = None,
            world_size: int | None = None, number_of_streams: int = 4, device: torch.device | str | None = None) -> list:
    """Compile and run a host program on this rank: the list of its local outputs."""
    evaluator = Evaluator(module, name=name, rank=rank, world_size=world_size,
                          number_of_streams=number_of_streams, device=device)
    return evaluator.run(inputs)


def find_function(module: ModuleOp, name: str | None = None) -> FunctionLikeOp:
    """The `hir.program` (preferred) or `fusion.func` named `name`, or the only/first program."""
    if name is not None:
        found = symbols.lookup(module, name)
        if found is None:
            raise ValueError(f"the module has no hir.program or fusion.func named @{name}")
        return found
    programs = symbols.programs(module)
    if len(programs) > 1:
        raise ValueError(f"the module has {len(programs)} programs; name one of "
                         + ", ".join("@" + p.sym_name.data for p in programs))
    if programs:
        return programs[0]
    candidates = symbols.functions(module)
    if not candidates:
        raise ValueError("the module has neither a hir.program nor a fusion.func")
    return candidates[0]


def program_teams(program: Operation, comm: Communicator) -> list[tuple[int, ...]]:
    """Every team of the program's collectives and symmetric buffers (the devices of its
    mesh); refuses (at the op) one this world cannot form."""
    teams = []
    for op in program.walk():
        if isinstance(op, hir.CollectiveOp):
            team = tuple(op.team_ids)
        elif isinstance(op, hir.AllocateOp) and op.is_symmetric:
            team = tensor_type(op.result).mesh.devices  # type: ignore[union-attr]  # verified: it has a mesh
        else:
            continue
        problem = comm.team_problem(team)
        if problem:
            raise op_error(op, problem)
        teams.append(team)
    return teams


class _ArgSpec:
    """What one argument of the entry function must be on this rank."""

    def __init__(self, label: str, tensor_type: TensorType | None, rank: int | None):
        self.label = label
        self.type = tensor_type
        self.rank = rank
        if tensor_type is not None:
            self.present = tensor_type.is_on_rank(rank)
            self.shape = logical_shape(tensor_type, rank)
            self.dtype = torch_dtype(tensor_type)

    @staticmethod
    def of(arg: SSAValue, rank: int | None) -> _ArgSpec:
        label = f"%{arg.name_hint}" if arg.name_hint else f"#{arg.index}"  # type: ignore[attr-defined]
        return _ArgSpec(label, arg.type if isinstance(arg.type, TensorType) else None, rank)

    def problem(self, value: Any, device: torch.device) -> str | None:
        if self.type is None:
            return None if isinstance(value, int) else f"expected an integer, got {type(value).__name__}"
        if not self.present:
            if value is None:
                return None
            return f"expected None (rank {self.rank} is not in mesh {self.type.mesh}), got a tensor"
        if not isinstance(value, torch.Tensor):
            got = "None" if value is None else type(value).__name__
            return f"expected a tensor of shape {list(self.shape)} and dtype {self.dtype}, got {got}"
        if value.dim() != len(self.shape) or any(e not in (DYNAMIC, g) for e, g in zip(self.shape, value.shape)):
            where = f"local shard on rank {self.rank} of" if self.rank is not None else "tensor of"
            return (f"expected shape {[e if e != DYNAMIC else '?' for e in self.shape]} ({where} {self.type}), "
                    f"got {list(value.shape)}")
        if value.dtype != self.dtype:
            return f"expected dtype {self.dtype}, got {value.dtype}"
        if value.device != device and not (device.type == value.device.type and device.index is None):
            return f"expected a tensor on {device}, got one on {value.device}"
        return None


# --------------------------------------------------------------------------- #
# Compilation
# --------------------------------------------------------------------------- #


def _int_cmp(predicate: int) -> Callable[[int, int], bool]:
    return [
        lambda a, b: a == b, lambda a, b: a != b, lambda a, b: a < b, lambda a, b: a <= b,
        lambda a, b: a > b, lambda a, b: a >= b, lambda a, b: a < b, lambda a, b: a <= b,
        lambda a, b: a > b, lambda a, b: a >= b,
    ][predicate]


def _trunc_div(a: int, b: int) -> int:
    q = abs(a) // abs(b)
    return -q if (a < 0) != (b < 0) else q


def _trunc_rem(a: int, b: int) -> int:
    return a - b * _trunc_div(a, b)


_ARITH_BINARY: dict[type[Operation], Callable[[Any, Any], Any]] = {
    arith.AddiOp: lambda a, b: a + b, arith.SubiOp: lambda a, b: a - b, arith.MuliOp: lambda a, b: a * b,
    arith.DivSIOp: _trunc_div, arith.DivUIOp: lambda a, b: a // b, arith.RemSIOp: _trunc_rem,
    arith.RemUIOp: lambda a, b: a % b, arith.FloorDivSIOp: lambda a, b: a // b,
    arith.CeilDivSIOp: lambda a, b: -(-a // b), arith.CeilDivUIOp: lambda a, b: -(-a // b),
    arith.MaxSIOp: max, arith.MinSIOp: min, arith.MaxUIOp: max, arith.MinUIOp: min,
    arith.AndIOp: lambda a, b: a & b, arith.OrIOp: lambda a, b: a | b, arith.XOrIOp: lambda a, b: a ^ b,
    arith.AddfOp: lambda a, b: a + b, arith.SubfOp: lambda a, b: a - b, arith.MulfOp: lambda a, b: a * b,
    arith.DivfOp: lambda a, b: a / b, arith.MaximumfOp: max, arith.MinimumfOp: min,
}
_ARITH_IDENTITY = (arith.IndexCastOp, arith.ExtSIOp, arith.ExtUIOp, arith.TruncIOp)
_TERMINATORS = (hir.ReturnOp, fusion.ReturnOp, scf.YieldOp)


def _fresh_step(f: Callable, result: int, args: list[int]) -> Step:
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


class _Unbound(ValueError):
    pass


def _into_step(f: Callable, result: int, dest: int, args: list[int], dest_name: str) -> Step:
    message = f"destination {dest_name} is not bound (allocate it first)"
    if len(args) == 1:
        (a,) = args

        def step(env: list) -> None:
            out = env[dest]
            if out is None:
                raise _Unbound(message)
            env[result] = f(out, env[a])
    elif len(args) == 2:
        a, b = args

        def step(env: list) -> None:
            out = env[dest]
            if out is None:
                raise _Unbound(message)
            env[result] = f(out, env[a], env[b])
    else:
        def step(env: list) -> None:
            out = env[dest]
            if out is None:
                raise _Unbound(message)
            env[result] = f(out, *[env[s] for s in args])
    return step


def _value_name(value: SSAValue) -> str:
    return f"%{value.name_hint}" if value.name_hint else "its destination"


class _Compiler:
    """Compiles one function body. `local`: host-program semantics on this rank's shards."""

    def __init__(self, evaluator: Evaluator, local: bool, units: dict | None = None):
        self.ev = evaluator
        self.local = local
        self.rank = evaluator.rank if local else None
        self.ctx = OpContext(self.rank, evaluator.device)
        self.slots: dict[SSAValue, int] = {}
        self.template: list = []
        self.units: dict = {} if units is None else units
        self.destinations: dict[SSAValue, int] = {}
        """Unit results written straight into a post's `outs` (see `unit`)."""

    # -- slots ----------------------------------------------------------------
    def slot(self, value: SSAValue) -> int:
        index = self.slots.get(value)
        if index is None:
            index = self.slots[value] = len(self.template)
            self.template.append(None)
        return index

    def constant(self, value: SSAValue, python_value: Any) -> None:
        self.template[self.slot(value)] = python_value

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
        if isinstance(op, fusion.ComputeOp):
            return self.recorded(op, self.compute(op))
        if isinstance(op, hir.CollectiveOp):
            return self.recorded(op, self.collective(op))
        if isinstance(op, hir.PointToPointOp):
            return self.recorded(op, self.point_to_point(op))
        if type(op) in _ARITH_BINARY:
            return _fresh_step(_ARITH_BINARY[type(op)], self.slot(op.results[0]), [self.slot(o) for o in op.operands])
        handler = _HANDLERS.get(type(op))
        if handler is None:
            raise op_error(op, "is not supported by the runtime")
        step = handler(self, op)
        return self.recorded(op, step) if isinstance(op, (hir.PostOnStreamOp, hir.WaitOp)) else step

    def recorded(self, op: Operation, step: Step | None) -> Step | None:
        """In stream-recording mode, log the stream each device-work op runs on."""
        log = self.ev.stream_log
        if step is None or log is None:
            return step
        streams, name = self.ev.streams, op.name

        def logged(env: list) -> None:
            log.append((name, streams.stream_id(streams.current())))
            step(env)

        return logged

    def on_rank(self, values: Sequence[SSAValue]) -> bool:
        return all(v.type.is_on_rank(self.rank) for v in values if isinstance(v.type, TensorType))

    # -- compute ----------------------------------------------------------------
    def compute(self, op: fusion.ComputeOp) -> Step | None:
        if not self.on_rank([*op.operands, op.result]):
            return None
        if self.local and communicates(op):
            raise op_error(op, "needs a communication (it reshards its input or reduces a sharded axis) but was "
                               "not lowered to one; run the hostir-lower pipeline first")
        try:
            kernel = build_kernel(op, self.ctx)
        except UnsupportedOp as error:
            raise op_error(op, str(error)) from None
        operands = op.operands[:-1] if op.out is not None else op.operands  # the destination is last
        args = [self.slot(o) for o in operands]
        result = self.slot(op.result)
        if op.out is not None:
            return _into_step(kernel.into, result, self.slot(op.out), args, _value_name(op.out))
        if op.result in self.destinations:
            return _into_step(kernel.into, result, self.destinations[op.result], args, "the post's output")
        result_type = tensor_type(op.result)
        if value_alloc_perm(result_type) is None:
            return _fresh_step(kernel.fresh, result, args)
        # A fresh result with an allocation order: allocate it in that order, compute into it.
        rank, device, into = self.rank, self.ev.device, kernel.into
        return _fresh_step(lambda *xs: into(empty_buffer(result_type, rank, device), *xs), result, args)

    # -- hir --------------------------------------------------------------------
    def allocate(self, op: hir.AllocateOp) -> Step | None:
        t = tensor_type(op.result)
        if not t.is_on_rank(self.rank):
            return None
        if op.is_symmetric:
            return self.acquire_symmetric(op)
        shape = logical_shape(t, self.rank)
        if DYNAMIC in shape:
            raise op_error(op, f"cannot allocate {t}: its local shape {['?' if e == DYNAMIC else e for e in shape]} is dynamic")
        result, rank, device = self.slot(op.result), self.rank, self.ev.device
        if value_alloc_perm(t) is None:
            dtype = torch_dtype(t)

            def step(env: list) -> None:
                if env[result] is None:
                    env[result] = torch.empty(shape, dtype=dtype, device=device)
        else:
            def step(env: list) -> None:
                if env[result] is None:
                    env[result] = empty_buffer(t, rank, device)
        return step

    def acquire_symmetric(self, op: hir.AllocateOp) -> Step:
        """Bind this rank's instance of the symmetric buffer (created once, when the
        program was compiled) once every peer is done with its own (docs/copy_engine.md)."""
        acquire, result = self.ev.copy_engine.acquire(op), self.slot(op.result)

        def step(env: list) -> None:
            env[result] = acquire()

        return step

    def deallocate(self, op: hir.DeallocateOp) -> Step | None:
        """Drop the buffer and every value that aliases it (results written into it), so
        the memory really goes back to the allocator; a symmetric buffer stays (every run
        reuses it) and is released to the peers instead."""
        slots = [self.slot(v) for v in op.freed_values()]
        owner = op.buffer.owner
        if isinstance(owner, hir.AllocateOp) and owner.is_symmetric:
            if not tensor_type(op.buffer).is_on_rank(self.rank):
                return None
            release = self.ev.copy_engine.release(owner)

            def step(env: list) -> None:
                release()
                for slot in slots:
                    env[slot] = None

            return step

        def step(env: list) -> None:
            for slot in slots:
                env[slot] = None

        return step

    def alias_select(self, op: hir.AliasSelectOp) -> Step | None:
        t = tensor_type(op.input)
        if not t.is_on_rank(self.rank):
            return None
        axis = op.axis_index
        chosen = t.axes[axis]
        if self.local and any(p.parallel.is_device for p in chosen.pieces):
            raise op_error(op, f"selects on axis {axis}, which is sharded across devices")
        dim = axis - sum(a.is_reduction for a in t.axes[:axis])
        source, result = self.slot(op.input), self.slot(op.result)
        one_chunk = self.local and t.stream_allocated and axis == t.stream_axis()
        if chosen.is_broadcast or one_chunk:
            # A broadcast axis has one element; a stream-allocated buffer holds one chunk.
            def step(env: list) -> None:
                env[result] = env[source].select(dim, 0)
        else:
            index = self.slot(op.index)

            def step(env: list) -> None:
                env[result] = env[source].select(dim, env[index])
        return step

    def extent(self, op: hir.ExtentOp) -> Step | None:
        t = tensor_type(op.input)
        axis = op.axis.value.data
        if t.axes[axis].extent != DYNAMIC:
            self.constant(op.result, t.axes[axis].extent)
            return None
        if t.axes[axis].is_reduction:
            raise op_error(op, "the extent of a dynamic reduction axis is not stored in any buffer")
        dim = axis - sum(a.is_reduction for a in t.axes[:axis])
        factor = 1
        if self.local:
            for piece in t.axes[axis].pieces:
                if piece.parallel.is_device and t.mesh is not None:
                    factor *= t.mesh.axis_size(piece.parallel)
                elif piece.parallel == ParallelKind.STREAM and t.stream_allocated:
                    if piece.extent == DYNAMIC:
                        raise op_error(op, "a dynamic stream-allocated axis has no known extent")
                    factor *= piece.extent
        source, result = self.slot(op.input), self.slot(op.result)

        def step(env: list) -> None:
            env[result] = env[source].shape[dim] * factor

        return step

    def get_current_stream(self, op: hir.GetCurrentStreamOp) -> Step:
        current, result = self.ev.streams.current, self.slot(op.result)

        def step(env: list) -> None:
            env[result] = current()

        return step

    def stream(self, op: hir.StreamOp) -> Step:
        get, key, result = self.ev.streams.get, self.slot(op.key), self.slot(op.result)

        def step(env: list) -> None:
            env[result] = get(env[key])

        return step

    def set_current_stream(self, op: hir.SetCurrentStreamOp) -> Step:
        set_current, stream = self.ev.streams.set_current, self.slot(op.stream)

        def step(env: list) -> None:
            set_current(env[stream])

        return step

    def synchronize(self, op: hir.SynchronizeOp) -> Step:
        synchronize, stream = self.ev.streams.synchronize, self.slot(op.stream)

        def step(env: list) -> None:
            synchronize(env[stream])

        return step

    def number_of_streams(self, op: hir.NumberOfStreamsOp) -> None:
        self.constant(op.result, self.ev.number_of_streams)

    def post_on_stream(self, op: hir.PostOnStreamOp) -> Step | None:
        if not self.on_rank([*op.inputs, *op.outs, *op.outputs]):
            return None
        ins = [self.slot(v) for v in op.inputs]
        results = [self.slot(v) for v in op.outputs]
        if not op.outs:
            unit = self.unit(op, outs=0, direct=False)

            def step(env: list) -> None:
                for slot, value in zip(results, unit([env[s] for s in ins])):
                    env[slot] = value

            return step
        # Writing straight into an out buffer that is also an input could clobber the
        # input before the unit has read it: such posts copy their results at the end.
        direct = not set(op.outs) & set(op.inputs)
        unit = self.unit(op, outs=len(op.outs), direct=direct)
        outs = [self.slot(v) for v in op.outs]

        def step(env: list) -> None:
            buffers = [env[s] for s in outs]
            if any(b is None for b in buffers):
                raise _Unbound("an outs buffer is not bound (allocate it first)")
            for slot, value in zip(results, unit([env[s] for s in ins] + buffers)):
                env[slot] = value

        return step

    def unit(self, op: hir.PostOnStreamOp, outs: int, direct: bool) -> CompiledFunction:
        """The post's `fusion.func`, compiled once per way of being called."""
        key = (op.callee_name(), outs, direct)
        if key not in self.units:
            self.units[key] = _Compiler(self.ev, self.local, self.units).function(op.unit(), outs, direct)
        return self.units[key]

    def collective(self, op: hir.CollectiveOp) -> Step | None:
        work = self.slot(op.work)
        if self.rank not in op.team_ids:
            self.constant(op.work, DONE)
            return None
        if op.uses_copy_engine:
            return self.copy_engine_collective(op)
        try:
            post = self.ev.comm.poster(op)
        except CollectiveError as error:
            raise op_error(op, str(error)) from None
        source, dest = self.slot(op.input), self.slot(op.output)

        def step(env: list) -> None:
            env[work] = post(env[source], env[dest])

        return step

    def copy_engine_collective(self, op: hir.CollectiveOp) -> Step:
        """Post through the copy-engine algorithm of `op` on flat views of its buffers."""
        if self.ev.copy_engine is None:
            raise op_error(op, "a copy-engine collective needs symmetric buffers: its program allocates none")
        post = self.ev.copy_engine.collective(op).post
        buffers = [(self.slot(v), value_alloc_perm(tensor_type(v)), what)
                   for v, what in ((op.input, "input"), (op.output, "output"), (op.via, "via")) if v is not None]
        work = self.slot(op.work)

        def step(env: list) -> None:
            env[work] = post(*(flatten_in_allocation_order(env[slot], perm, what) for slot, perm, what in buffers))

        return step

    def point_to_point(self, op: hir.PointToPointOp) -> Step | None:
        work = self.slot(op.work)
        if not tensor_type(op.buffer).is_on_rank(self.rank):
            self.constant(op.work, DONE)
            return None
        if self.ev.comm.backend is None:
            raise op_error(op, "needs torch.distributed; run the program with run_spmd or hostir-run --nproc")
        post = self.ev.comm.point_to_point(op)
        buffer, peer = self.slot(op.buffer), self.slot(op.peer)

        def step(env: list) -> None:
            env[work] = post(env[buffer], env[peer])

        return step

    def wait(self, op: hir.WaitOp) -> Step:
        work, poster = self.slot(op.work), op.work.owner
        member = self.slot(op.member) if op.member is not None else None

        def step(env: list) -> None:
            token = env[work]
            if token is None:
                raise _Unbound("waits for a collective that was never posted")
            try:
                token.wait(None if member is None else env[member])
            except RuntimeError as error:  # a peer that never came: the poster is the culprit
                raise ExecutionError(describe(poster, f"did not complete: {str(error).strip()}")) from error

        return step

    def team_position(self, op: hir.TeamPositionOp) -> None:
        team = op.team_ids
        self.constant(op.result, team.index(self.rank) if self.rank in team else -1)

    # -- arith and scf ----------------------------------------------------------
    def arith_constant(self, op: arith.ConstantOp) -> None:
        value = op.value
        if isinstance(value, IntegerAttr):
            data = value.value.data
            is_bool = isinstance(value.type, IntegerType) and value.type.width.data == 1
            self.constant(op.result, bool(data) if is_bool else data)
        elif isinstance(value, FloatAttr):
            self.constant(op.result, float(value.value.data))
        else:
            raise op_error(op, f"constant {value} is not a scalar")

    def arith_cmpi(self, op: arith.CmpiOp) -> Step:
        return _fresh_step(_int_cmp(op.predicate.value.data), self.slot(op.result), [self.slot(op.lhs), self.slot(op.rhs)])

    def arith_select(self, op: arith.SelectOp) -> Step:
        cond, a, b, result = self.slot(op.cond), self.slot(op.lhs), self.slot(op.rhs), self.slot(op.result)

        def step(env: list) -> None:
            env[result] = env[a] if env[cond] else env[b]

        return step

    def arith_identity(self, op: Operation) -> Step:
        return _fresh_step(lambda x: x, self.slot(op.results[0]), [self.slot(op.operands[0])])

    def scf_for(self, op: scf.ForOp) -> Step:
        body = op.body.block
        lb, ub, st = self.slot(op.lb), self.slot(op.ub), self.slot(op.step)
        iv = self.slot(body.args[0])
        carried = [self.slot(a) for a in body.args[1:]]
        inits = [self.slot(v) for v in op.iter_args]
        results = [self.slot(v) for v in op.res]
        steps, ops = self.block(body)
        yielded = [self.slot(v) for v in body.last_op.operands]
        if not carried:
            def step(env: list) -> None:
                for i in range(env[lb], env[ub], env[st]):
                    env[iv] = i
                    _run(steps, ops, env)
            return step

        def step_carried(env: list) -> None:
            for slot, init in zip(carried, inits):
                env[slot] = env[init]
            for i in range(env[lb], env[ub], env[st]):
                env[iv] = i
                _run(steps, ops, env)
                for slot, value in zip(carried, [env[y] for y in yielded]):
                    env[slot] = value
            for slot, value in zip(results, carried):
                env[slot] = env[value]

        return step_carried

    def scf_if(self, op: scf.IfOp) -> Step:
        cond = self.slot(op.cond)
        results = [self.slot(v) for v in op.output]
        branches = []
        for region in (op.true_region, op.false_region):
            if region.blocks:
                steps, ops = self.block(region.block)
                yielded = [self.slot(v) for v in region.block.last_op.operands] if region.block.last_op else []
            else:
                steps, ops, yielded = [], [], []
            branches.append((steps, ops, yielded))
        (then_steps, then_ops, then_yield), (else_steps, else_ops, else_yield) = branches

        def step(env: list) -> None:
            steps, ops, yielded = (then_steps, then_ops, then_yield) if env[cond] else (else_steps, else_ops, else_yield)
            _run(steps, ops, env)
            for slot, value in zip(results, [env[y] for y in yielded]):
                env[slot] = value

        return step


def _copy_step(source: int, dest: int) -> Step:
    def step(env: list) -> None:
        copy_into(env[dest], env[source])

    return step


_HANDLERS: dict[type[Operation], Callable[[_Compiler, Any], Step | None]] = {
    hir.AllocateOp: _Compiler.allocate,
    hir.DeallocateOp: _Compiler.deallocate,
    hir.AliasSelectOp: _Compiler.alias_select,
    hir.ExtentOp: _Compiler.extent,
    hir.GetCurrentStreamOp: _Compiler.get_current_stream,
    hir.StreamOp: _Compiler.stream,
    hir.SetCurrentStreamOp: _Compiler.set_current_stream,
    hir.SynchronizeOp: _Compiler.synchronize,
    hir.NumberOfStreamsOp: _Compiler.number_of_streams,
    hir.PostOnStreamOp: _Compiler.post_on_stream,
    hir.WaitOp: _Compiler.wait,
    hir.TeamPositionOp: _Compiler.team_position,
    arith.ConstantOp: _Compiler.arith_constant,
    arith.CmpiOp: _Compiler.arith_cmpi,
    arith.SelectOp: _Compiler.arith_select,
    scf.ForOp: _Compiler.scf_for,
    scf.IfOp: _Compiler.scf_if,
    **{cls: _Compiler.arith_identity for cls in _ARITH_IDENTITY},
}
