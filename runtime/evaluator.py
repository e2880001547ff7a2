"""The evaluator: a `hir.program` (one rank's host program) or a `fusion.func` (the eager
reference semantics) compiled ONCE into one generated Python function, then run many times.

Compilation gives every SSA value a local variable of that function and every op its lines:
the torch call, collective post or stream call it makes, on those variables. Nothing at run
time dispatches on op names or reads xDSL attributes: every such decision (which torch
function, which variables, which process group, whether this rank takes part at all) is
made while compiling. An `scf.for` becomes a Python `for` over its body's lines, so values
derived from the loop index are simply recomputed; `Evaluator.compiled.source` shows the
function.

Binding rules (nvFuser's HostIrEvaluator, csrc/host_ir/evaluator.cpp):
- `hir.allocate` binds a new local buffer (`TensorType.local_shape(rank)`, dense in
  allocation order) unless its value is already bound; on a rank outside the type's mesh
  it binds nothing (None).
- A compute op with a destination writes into it (`out=` / `copy_`) and its result aliases
  it; without one it computes a fresh tensor that aliases none of its operands, dense in
  its type's allocation order (as every buffer is: inputs are laid out so before a run).
- `hir.alias_select` binds a view (`select` on the torch dim of the logical axis, index 0 on
  a broadcast axis); `hir.deallocate` drops the binding.
- `hir.post_on_stream` runs its `fusion.func` unit (compiled once) into the `outs` buffers,
  or into fresh tensors when it has none.
- A compute op or post whose tensors' meshes do not contain this rank is skipped (its
  results stay None); so is a collective whose team does not contain it (its work is DONE).
Safety: what the passes should have lowered is refused when a host program is compiled,
by every rank alike (from the types, before deciding whether the rank takes part, so no
rank is left waiting for one that refused): a fusion instead of a program, a compute op
that still needs a communication (`communicates`: it reshards or reduces a sharded axis,
or mixes tensors with and without a mesh), a stream-chunk buffer (`alloc=[0 stream, ..]`)
outside a stream loop, a communication of a strided view. Running them on local shards
would compute a wrong answer.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import torch
from xdsl.dialects.builtin import ModuleOp
from xdsl.ir import BlockArgument, Operation, SSAValue

from hostir_dialect import fusion, hir, symbols
from hostir_dialect.diagnostics import location_of, op_error
from hostir_dialect.functions import FunctionLikeOp
from hostir_dialect.tensor_type import DYNAMIC, TensorType, tensor_type

from .buffers import BufferUses
from .communicator import Communicator
from .compile import DEFAULT_NUMBER_OF_STREAMS, MAX_NUMBER_OF_STREAMS, CompileContext, ExecutionError, compile_function
from .compile.unit_backends import check_unit_backend, default_unit_backend
from .copy_engine import MAX_COPY_ENGINE_STREAMS, CopyEngineProgram
from .graphs import CUDA_GRAPH, CudaGraphs, graph_mode, signature
from .hazards import Hazards, enabled_by_environment
from .layouts import empty_buffer, in_allocation_order, logical_shape, shard_factor, torch_dtype
from .result_sets import ResultSets
from .streams import make_streams


class InputError(ExecutionError):
    """The inputs given to a program do not match its signature; nothing was run."""


class Evaluator:
    """A `hir.program` or `fusion.func` of `module`, compiled once for this rank.

    For a `hir.program`: `rank`/`world_size` default to the initialized torch.distributed
    world (else 0 of 1); every rank must construct its evaluators in the same order (the
    process groups of the program's teams are created here, collectively). A `fusion.func`
    runs with the eager reference semantics on global (unsharded) tensors.
    `record_streams`: log `(op name, stream id)` for every op that enqueues device work.
    `cuda_graph`: capture the program in a CUDA graph on its first run for an input
    signature and replay it afterwards (runtime/graphs.py gives the contract). By default
    (None) on a GPU wherever the program is capturable, never overwriting a result the
    caller still holds (two graphs used in turn hand out their own buffers, copies only
    where the caller holds both); True: programs a graph cannot replay are refused here,
    and outputs are the graph's buffers, overwritten by the next run; False: always
    eager. `graph_mode` says how runs execute.
    `trace`: run every hir and fusion op inside a profiler range named after it and its
    source location, and each run inside `hir.program @name`, for `runtime.trace`.
    `unit_backend`: how kernel units run, "compiled" (fused kernels, torch.compile; the
    default on GPUs) or "eager" (one torch call per op; the default on CPUs), see
    runtime/compile/unit_backends.py.
    `check_hazards` (CPU ranks; default: the environment variable HOSTIR_CHECK_HAZARDS):
    fail, naming both ops, where two pieces of device work touch the same memory and
    nothing in the program orders them (runtime/hazards.py).
    `copy_engine_streams`: communication streams per phase of the copy-engine
    collectives, taken in turn by their posts (runtime/copy_engine.py `Ordering`; 1, the
    default, runs every transfer of a phase in one stream).
    """

    def __init__(self, module: ModuleOp, *, name: str | None = None, rank: int | None = None,
                 world_size: int | None = None, number_of_streams: int = DEFAULT_NUMBER_OF_STREAMS,
                 device: torch.device | str | None = None, communicator: Communicator | None = None,
                 record_streams: bool = False, cuda_graph: bool | None = None, trace: bool = False,
                 check_hazards: bool | None = None, unit_backend: str | None = None, copy_engine_streams: int = 1):
        check_module(module)
        if not 1 <= copy_engine_streams <= MAX_COPY_ENGINE_STREAMS:
            raise ValueError(f"copy_engine_streams must be from 1 to {MAX_COPY_ENGINE_STREAMS}, got {copy_engine_streams}")
        self.function = find_function(module, name)
        self.is_program = isinstance(self.function, hir.ProgramOp)
        if not self.is_program and (rank, world_size, communicator) != (None, None, None):
            # Its global semantics on each rank's local shards would return whole tensors
            # where the signature promises shards.
            raise op_error(self.function, "is a fusion, not a host program: lower it (hostir-lower) before running "
                                          "it on ranks; runtime.run_fusion evaluates it on unsharded tensors")
        if cuda_graph and not isinstance(self.function, hir.ProgramOp):
            raise ValueError(f"cuda_graph runs a hir.program; @{self.name} is a fusion.func")
        device = checked_device(device) if device is not None else None
        program = self.function if isinstance(self.function, hir.ProgramOp) else None
        self.comm: Communicator | None = None
        self.rank: int | None = None
        self.hazards: Hazards | None = None
        self.copy_engine: CopyEngineProgram | None = None
        if program is not None:
            comm = self.comm = communicator or Communicator.for_current_process(rank, world_size, device)
            self.rank = comm.rank
            self.device = comm.device
            self.hazards = _hazards(check_hazards, self.device)
            self.streams = make_streams(self.device, self.hazards)
            comm.create_groups(program_teams(program, comm))
            self.copy_engine = self._copy_engine(program, comm, copy_engine_streams)
        else:
            self.device = device or torch.device("cpu")
            self.streams = make_streams(self.device)
        if number_of_streams < 1:
            raise ValueError(f"number_of_streams must be at least 1, got {number_of_streams}")
        if number_of_streams > MAX_NUMBER_OF_STREAMS:
            raise ValueError(f"number_of_streams must be at most {MAX_NUMBER_OF_STREAMS}, got {number_of_streams}")
        self.number_of_streams = number_of_streams
        self.unit_backend = check_unit_backend(unit_backend or default_unit_backend(self.device))
        self.stream_log: list[tuple[str, int]] | None = [] if record_streams else None
        self.trace = trace
        self.context = CompileContext(
            local=self.is_program, rank=self.rank, device=self.device, streams=self.streams,
            number_of_streams=number_of_streams, comm=self.comm, copy_engine=self.copy_engine,
            stream_log=self.stream_log, trace=trace, hazards=self.hazards, unit_backend=self.unit_backend,
        )
        self.trace_kinds = self.context.trace_kinds
        buffers = BufferUses(self.function)
        self.context.program_buffers = buffers
        self.compiled = compile_function(self.context, self.function, buffers.immutable)
        self._arg_specs = [_ArgSpec.of(arg, self.rank) for arg in self.function.args]
        self._split_extents = split_argument_extents(self.function)
        self._checked: tuple | None = None
        """The signature (runtime/graphs.py) of the inputs last checked: every check reads
        only what it holds (presence, type, shape, dtype, device), so inputs of the same
        signature pass again and a run of them skips the checks (host time before a graph's
        launch, which a settled run pays)."""
        self.graph_mode = graph_mode(cuda_graph, self.device, program)
        self.result_sets = self._result_sets(cuda_graph)
        self.graphs = (CudaGraphs(self.run_eagerly, self.streams, for_callers=cuda_graph is None,  # type: ignore[arg-type]  # graph mode runs on CUDA streams
                                  result_buffers=self.result_buffers, result_sets=self.result_sets)
                       if self.graph_mode == CUDA_GRAPH else None)

    def _copy_engine(self, program: hir.ProgramOp, comm: Communicator, lanes: int) -> CopyEngineProgram | None:
        """The program's symmetric buffers and flags, if it has any (created collectively)."""
        if not any(isinstance(op, hir.AllocateOp) and op.is_symmetric for op in program.walk()):
            return None
        timeout = comm.timeout.total_seconds() if comm.timeout else 60.0
        streams = self.streams
        return CopyEngineProgram(program, comm.rank, comm.device, comm.group, timeout,
                                 lambda: streams.active, self.hazards, lanes)

    def _result_sets(self, cuda_graph: bool | None) -> ResultSets | None:
        """The result sets of a program whose peers write into its results, unless its
        results are overwritten by the next run anyway (`cuda_graph=True` in graph mode:
        then every run uses the scratch set)."""
        copy_engine = self.copy_engine
        if copy_engine is None or not copy_engine.result_positions or (cuda_graph and self.graph_mode == CUDA_GRAPH):
            return None

        def buffers(k: int) -> list | None:
            ordinary = self.result_buffers()
            if ordinary is not None:
                ordinary[:] = [copy_engine.result_buffers(k).get(p, b) for p, b in enumerate(ordinary)]
            return ordinary

        return ResultSets(buffers, copy_engine.use_result_set, copy_engine.agreement)

    @property
    def name(self) -> str:
        return self.function.sym_name.data

    def run(self, inputs: Sequence[Any]) -> list:
        """Run once on this rank's inputs (local shards; None where the rank holds none):
        replay the program's CUDA graph in graph mode, else run it eagerly."""
        key = signature(inputs)
        if key != self._checked:
            self.check_inputs(inputs)
            self._checked = key
        else:
            key = self._checked  # one object run after run: the graphs know it by identity
        if self.trace:
            with torch.profiler.record_function(f"hir.program @{self.name}"):
                return self._run_checked(inputs, key)
        return self._run_checked(inputs, key)

    def bind_inputs(self, inputs: Sequence[Any]) -> list:
        """Inputs to pass to `run` from now on, holding `inputs`: in CUDA-graph mode the
        graphs' own input buffers (with `cuda_graph=True` a new signature is captured now;
        by default at its first run), which the caller may refill in place and whose runs
        copy nothing in; eagerly, `inputs` themselves."""
        self.check_inputs(inputs)
        if self.graphs is not None:
            return self.graphs.bind(inputs)
        return list(inputs)

    def _run_checked(self, inputs: Sequence[Any], key: tuple) -> list:
        sets = self.result_sets
        if sets is None:
            return self.graphs.run(inputs, key) if self.graphs is not None else self.run_eagerly(inputs)
        sets.begin_run()
        if self.graphs is not None:
            results = self.graphs.run(inputs, key)
        else:
            results = sets.run_into_chosen(lambda buffers: self.run_eagerly(inputs, buffers))
        sets.offer_next()  # every run, on every member, while the device works; read as the next begins
        return results

    def run_eagerly(self, inputs: Sequence[Any], results: Sequence[Any] | None = None) -> list:
        """Run the compiled steps once on checked inputs (a graph captures such a run, so the
        copy-engine slot counters are rewound when a graph is captured, not when it is replayed);
        with `results` (from `result_buffers`), the results are computed into those buffers."""
        if self.copy_engine is not None:
            self.copy_engine.begin_run()
        self.streams.begin_run()
        try:
            return self.compiled([spec.laid_out(value) for spec, value in zip(self._arg_specs, inputs)], results)
        finally:
            self.streams.end_run()

    def result_buffers(self) -> list | None:
        """Fresh buffers for this rank's results (None where it holds none), laid out as the
        program's results are; None when a result's local shape is only known at run time."""
        buffers = []
        for t in self.function.function_type.outputs.data:
            if not isinstance(t, TensorType) or DYNAMIC in logical_shape(t, self.rank):
                return None
            buffers.append(empty_buffer(t, self.rank, self.device) if t.is_on_rank(self.rank) else None)
        return buffers

    def check_inputs(self, inputs: Sequence[Any]) -> None:
        if len(inputs) != len(self._arg_specs):
            raise InputError(f"@{self.name} takes {len(self._arg_specs)} inputs, got {len(inputs)}")
        for index, (spec, value) in enumerate(zip(self._arg_specs, inputs)):
            problem = spec.problem(value, self.device)
            if problem:
                raise InputError(f"@{self.name} argument {index} ({spec.label}): {problem}")
        for split in self._split_extents:
            problem = split.problem(self._arg_specs[split.argument], inputs[split.argument])
            if problem:
                raise InputError(f"@{self.name} argument {split.argument} ({self._arg_specs[split.argument].label}): {problem}")


def _hazards(check: bool | None, device: torch.device) -> Hazards | None:
    """The stream hazard check of a program on this device, if asked for (CPU ranks only;
    the environment's switch applies where it can)."""
    if check is None:
        check = enabled_by_environment() and device.type == "cpu"
    return Hazards() if check else None


def check_module(module: Any) -> None:
    if not isinstance(module, ModuleOp):
        raise TypeError(f"expected a ModuleOp (parse IR text with hostir_dialect.parse_module), got {module!r}")


def checked_device(device: torch.device | str | int) -> torch.device:
    """A torch device this process can use (an integer: that CUDA device, as nvFuser reads it)."""
    try:
        device = torch.device("cuda", device) if isinstance(device, int) else torch.device(device)
    except RuntimeError:
        raise ValueError(f"invalid device {device!r}; use 'cpu', 'cuda' or 'cuda:N'") from None
    if device.type == "cuda" and not torch.cuda.is_available():
        raise ValueError(f"device {str(device)!r} requested but CUDA is not available here")
    return device


def compile_program(module: ModuleOp, **options) -> Evaluator:
    """`Evaluator(module, **options)`: compile once, then call `.run(inputs)` many times."""
    return Evaluator(module, **options)


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
            found = op.teams.teams()  # a sliced team: every slice, which every rank creates
        elif isinstance(op, hir.AllocateOp) and op.is_symmetric:
            found = [tensor_type(op.result).mesh.devices]  # type: ignore[union-attr]  # verified: it has a mesh
        else:
            continue
        for team in found:
            problem = comm.team_problem(team)
            if problem:
                raise op_error(op, problem)
        teams += found
    return teams


@dataclass(frozen=True)
class _SplitExtent:
    """A dynamic axis that `allocate` splits by `factor`, whose extent is logical axis
    `axis` of argument `argument`: an input whose extent the factor does not divide is
    refused before the run, on every rank that holds it, not when the allocation fails."""

    argument: int
    axis: int
    factor: int
    allocate: hir.AllocateOp

    def problem(self, spec: _ArgSpec, value: Any) -> str | None:
        t = spec.type
        shards = shard_factor(t, self.axis) if t is not None else None
        if value is None or t is None or shards is None:
            return None  # absent here, or an extent only the run knows (a dynamic stream piece)
        extent = value.shape[t.value_position(self.axis)] * shards
        if extent % self.factor == 0:
            return None
        where = location_of(self.allocate)
        return (f"axis {self.axis} has extent {extent}, which the hir.allocate{f' at {where}' if where else ''} "
                f"splits by {self.factor}; give it a multiple of {self.factor}")


def split_argument_extents(function: FunctionLikeOp) -> list[_SplitExtent]:
    """Every dynamic axis an hir.allocate of `function` splits whose extent is that of an
    argument's axis, read by hir.extent through any sets (which keep logical extents)."""
    splits = []
    for op in function.walk():
        if not isinstance(op, hir.AllocateOp) or not op.extents:
            continue
        t = tensor_type(op.result)
        for axis, extent in zip(t.dynamic_value_axes(), op.extents):
            factor = t.axes[axis].split_factor
            read = extent.owner
            if factor == 1 or not isinstance(read, hir.ExtentOp):
                continue
            source = read.input
            while isinstance(source.owner, fusion.SetOp):
                source = source.owner.input
            if isinstance(source, BlockArgument) and source.owner is function.body.block:
                splits.append(_SplitExtent(source.index, read.axis.value.data, factor, op))
    return splits


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
            self.perm = tensor_type.value_allocation_order()

    @staticmethod
    def of(arg: SSAValue, rank: int | None) -> _ArgSpec:
        label = f"%{arg.name_hint}" if arg.name_hint else f"#{arg.index}"  # type: ignore[attr-defined]  # a function's arguments are block arguments
        return _ArgSpec(label, arg.type if isinstance(arg.type, TensorType) else None, rank)

    def laid_out(self, value: Any) -> Any:
        """The input as the program's buffers are: dense in its type's allocation order."""
        if self.type is None or value is None:
            return value
        return in_allocation_order(value, self.perm)

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
