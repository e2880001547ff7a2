"""`convert-op-to-communication`: every communicating `fusion.set` / `fusion.reduce` of a
host program (top level or in `scf.for` bodies at any depth) becomes its destination
buffer + collectives, each followed by `hir.wait` (nvFuser's ConvertOpToCommunication
and convertSingleOpToCommunication: csrc/host_ir/pass/convert_op_to_communication.cpp,
csrc/host_ir/lower_to_communication.cpp).

Decision table (in/out sharded = DIDx-sharded with a mesh of more than one device):

    op      in   out  meshes     collectives
    set     no   yes  any        scatter, root = first sender device in the receiver mesh
    set     yes  no   same       allgather, one per DIDx slice of the mesh
    set     yes  no   different  gather, one per receiving device
    set     yes  yes  any        send_recv, sender_mesh[i] -> receiver_mesh[i]
    set     no   no   different  broadcast from sender_mesh[0]
    reduce  yes  yes  same       reduce_scatter, one per DIDx slice
    reduce  yes  no   same       allreduce, one per DIDx slice
    reduce  yes  no   different  reduce, one per receiving device (root)

Teams on 2-D meshes. nvFuser gives Allgather/Allreduce/ReduceScatter the team
`mesh.getSlice(my_rank, DIDx)`, which depends on the rank; our program text is the same on
every rank, so we emit one collective per DIDx slice (one per mesh row). A rank is in
exactly one of them and the others are no-ops for it (ranks outside a team skip the op).

Buffers are the flattened local tensors (the buffer contracts of runtime/communicator.py),
so an axis that is gathered or scattered must be the outermost allocated axis with a local
extent above 1 on both sides, and the other axes must be allocated in the same order.

Transport (option `transport=nccl|copy-engine|auto`, docs/copy_engine.md): an all-gather,
reduce-scatter or all-reduce over a whole 1-D mesh, at the top level or in one loop with
constant bounds, can run on the copy engines. Its all-gather output buffer then becomes
`hir.allocate symmetric`, and a reduce-scatter or all-reduce gets a symmetric `via`
buffer, allocated before the loop with one slice per iteration. `copy-engine` refuses,
located, a collective that cannot; `auto` takes the copy engines wherever they can carry
the collective (every copy measured on 2x H200 beat NCCL's, docs/copy_engine.md).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects import arith, scf
from xdsl.dialects.builtin import IndexType, IntegerAttr, ModuleOp, UnitAttr
from xdsl.ir import Operation, SSAValue
from xdsl.passes import ModulePass
from xdsl.rewriter import InsertPoint, Rewriter
from xdsl.utils.str_enum import StrEnum
from xdsl.pattern_rewriter import PatternRewriter, PatternRewriteWalker, RewritePattern, op_type_rewrite_pattern

from hostir_dialect import fusion, hir
from hostir_dialect.diagnostics import located_like, op_error
from hostir_dialect.sharding import communicates, placement
from hostir_dialect.symbols import programs
from hostir_dialect.tensor_type import DYNAMIC, Axis, Mesh, ParallelKind, TensorType, tensor_type

from .cost_model import DEFAULT_MACHINE, Machine
from .sharding_policy import device_parallel_reduced_axes, is_inner_split

DIDX, DIDY = ParallelKind.DIDX, ParallelKind.DIDY


@dataclass(frozen=True)
class Collective:
    """One collective to post: the op class, its team (world ranks) and root."""

    kind: type[hir.CollectiveOp]
    team: tuple[int, ...]
    root: int | None = None


# --------------------------------------------------------------------------- #
# The decision (plain functions; they raise the located diagnostics)
# --------------------------------------------------------------------------- #


def plan_communication(op: Operation) -> list[Collective]:
    """The collectives that implement the communicating op `op`, in posting order."""
    if not isinstance(op, (fusion.SetOp, fusion.ReduceOp)):
        raise op_error(op, "computes as well as moves data between devices, which is not one communication; run decompose-reshardings first")
    source, target = tensor_type(op.input), tensor_type(op.result)
    sender, receiver = source.mesh, target.mesh
    if sender is None or receiver is None:
        raise op_error(op, "reshards between a tensor with a device mesh and one without; run propagate-shardings first")
    in_sharded = source.is_sharded(DIDX) and sender.size > 1
    out_sharded = target.is_sharded(DIDX) and receiver.size > 1
    if isinstance(op, fusion.ReduceOp) and not in_sharded and sender.size > 1:
        raise op_error(op, "the comm input must be sharded in case of reduce. Insert a `set` before the reduction to reshard")
    _check_parallelization(op, source, target)
    if isinstance(op, fusion.ReduceOp):
        _check_reduces_only_device_axis(op)
        return _plan_reduce(op, sender, receiver, out_sharded)
    return _plan_set(op, sender, receiver, in_sharded, out_sharded)


def _plan_set(op: fusion.SetOp, sender: Mesh, receiver: Mesh, in_sharded: bool, out_sharded: bool) -> list[Collective]:
    source, target = tensor_type(op.input), tensor_type(op.result)
    if not in_sharded and out_sharded:
        _check_layout(op, scattered=_didx_axis(target))
        _check_1d(op, receiver, "Scatter only supported on a 1D mesh")
        root = next((d for d in sender.devices if d in receiver.devices), None)
        if root is None:
            raise op_error(op, f"No common device found between the sender mesh {sender} and the receiver mesh {receiver}: scatter needs its root in both")
        return [Collective(hir.ScatterOp, receiver.devices, root)]
    if in_sharded and not out_sharded:
        gathered = op.axis_map(op.input)[_didx_axis(source)]
        _check_layout(op, scattered=gathered)
        if sender == receiver:
            return [Collective(hir.AllgatherOp, team) for team in _didx_slices(sender)]
        _check_1d(op, sender, "Gather only supported on a 1D mesh")
        return [Collective(hir.GatherOp, _with(sender.devices, root), root) for root in receiver.devices]
    if in_sharded and out_sharded:
        _check_same_sharded_axis(op, source, target)
        _check_1d(op, sender, "SendRecv only supported on 1D meshes")
        _check_1d(op, receiver, "SendRecv only supported on 1D meshes")
        if sender.size != receiver.size:
            raise op_error(op, f"the receiver and sender meshes have different sizes ({receiver} and {sender}); send_recv pairs them device by device")
        _check_layout(op)
        return [
            Collective(hir.SendRecvOp, (s,) if s == r else (s, r), s)
            for s, r in zip(sender.devices, receiver.devices)
        ]
    _check_layout(op)
    _check_1d(op, sender, "Broadcast only supported a 1D mesh")
    _check_1d(op, receiver, "Broadcast only supported a 1D mesh")
    root = sender.devices[0]
    return [Collective(hir.BroadcastOp, _with(receiver.devices, root), root)]


def _plan_reduce(op: fusion.ReduceOp, sender: Mesh, receiver: Mesh, out_sharded: bool) -> list[Collective]:
    if out_sharded:
        if sender != receiver:
            raise op_error(op, f"ReduceScatter operation must have the same sender and receiver device mesh, got {sender} and {receiver}")
        _check_layout(op, scattered=_didx_axis(tensor_type(op.result)))
        return [Collective(hir.ReduceScatterOp, team) for team in _didx_slices(sender)]
    _check_layout(op)
    if sender == receiver:
        return [Collective(hir.AllreduceOp, team) for team in _didx_slices(sender)]
    _check_1d(op, sender, "Reduce only supported a 1D mesh")
    return [Collective(hir.ReduceOp, _with(sender.devices, root), root) for root in receiver.devices]


def _didx_slices(mesh: Mesh) -> list[tuple[int, ...]]:
    """Every team `mesh.slice(rank, DIDx)` can be, each once, in mesh order."""
    return list(dict.fromkeys(mesh.slice(d, DIDX) for d in mesh.devices))


def _with(team: tuple[int, ...], device: int) -> tuple[int, ...]:
    return team if device in team else (*team, device)


def _didx_axis(t: TensorType) -> int:
    found = t.axis_with(DIDX, include_reduction=False)
    assert found is not None
    return found


def _check_1d(op: Operation, mesh: Mesh, message: str) -> None:
    if mesh.ndim != 1:
        raise op_error(op, f"{message}, got mesh {mesh}")


def _check_parallelization(op: Operation, source: TensorType, target: TensorType) -> None:
    """Only DIDx may change, and only on an outer split (nvFuser rejects the rest too)."""
    for t in (source, target):
        for index, axis in enumerate(t.axes):
            if is_inner_split(axis, DIDX):
                raise op_error(op, f"DIDx on an inner split (axis {index} of {t}) is not lowerable; split the axis outer")
    moved_didy = source.mesh != target.mesh and (source.is_sharded(DIDY) or target.is_sharded(DIDY))
    p, c = placement(source, DIDY), placement(target, DIDY, include_reduction=True)
    changed_didy = (p is None) != (c is None) or (
        p is not None and c is not None and (op.axis_map(op.input).get(p.axis) != c.axis or p.outer_factors != c.outer_factors)
    )
    if moved_didy or changed_didy:
        raise op_error(op, "resharding along DIDy is not lowerable: only DIDx may change, within one mesh for DIDy-sharded tensors")


def _check_same_sharded_axis(op: Operation, source: TensorType, target: TensorType) -> None:
    p, c = placement(source, DIDX), placement(target, DIDX)
    assert p is not None and c is not None
    if op.axis_map(op.input).get(p.axis) != c.axis or p.outer_factors != c.outer_factors:
        raise op_error(op, f"reshards from axis {p.axis} to axis {c.axis} (an all-to-all), which is not lowerable; gather first")


def _check_reduces_only_device_axis(op: fusion.ReduceOp) -> None:
    """One communication reduces across devices only: the reduced axis must be the
    DIDx axis, not split locally. A local part has to be reduced first (rFactor)."""
    if device_parallel_reduced_axes(op) != op.reduced_axes() or len(op.reduced_axes()) != 1:
        raise op_error(op, "reduces local data as well as across devices, which is not one communication; run decompose-reshardings first")
    axis = tensor_type(op.input).value_axes()[op.reduced_axes()[0]]
    if axis.is_split:
        raise op_error(op, "reduces a split device-parallel axis (a local part as well), which is not one communication; run decompose-reshardings first")


def _check_layout(op: fusion.SetOp | fusion.ReduceOp, scattered: int | None = None) -> None:
    """The flattened-buffer contracts must give the right result. `scattered` is the
    result axis gathered or scattered by the collective, if any: it must lead both
    buffers (nvFuser's isCommunicationLayoutCompliant); the other allocated axes must
    come in the same order in both."""
    source, target = tensor_type(op.input), tensor_type(op.result)
    axis_map = op.axis_map(op.input)
    source_order = [axis_map[a] for a in _allocated(source) if a in axis_map]
    target_order = _allocated(target)
    if scattered is not None:
        for order in (source_order, target_order):
            if scattered in order and order[0] != scattered:
                raise op_error(op, f"Resharding on an inner axis is not lowerable: axis {scattered} of the result must be the outermost allocated axis with a local extent above 1")
    if [a for a in source_order if a != scattered] != [a for a in target_order if a != scattered]:
        raise op_error(op, "input and result buffers allocate their axes in different orders, which no communication can convert")


def _allocated(t: TensorType) -> list[int]:
    """Logical axes of the local buffer in allocation order, without extent-1 ones."""
    return [i for i in t.allocation_order() if not t.axes[i].is_reduction and t.local_extent(i) != 1]


# --------------------------------------------------------------------------- #
# The transport
# --------------------------------------------------------------------------- #


class TransportChoice(StrEnum):
    """The pass option: one transport for every collective, or the best one per collective."""

    NCCL = "nccl"
    COPY_ENGINE = "copy-engine"
    AUTO = "auto"


def choose_transport(op: Operation, plan: list[Collective], choice: TransportChoice, machine: Machine) -> hir.Transport:
    if choice == TransportChoice.NCCL:
        return hir.Transport.NCCL
    problem = copy_engine_problem(op, plan)
    if choice == TransportChoice.COPY_ENGINE:
        if problem is not None:
            raise op_error(op, f"cannot communicate on the copy engines: {problem}")
        return hir.Transport.COPY_ENGINE
    if problem is None and copy_engine_is_faster(op, plan[0], machine):
        return hir.Transport.COPY_ENGINE
    return hir.Transport.NCCL


def copy_engine_is_faster(op: Operation, collective: Collective, machine: Machine) -> bool:
    """By the cost model, for the bytes each member sends each peer (dynamic: no)."""
    source, target = tensor_type(op.operands[0]), tensor_type(op.results[0])
    member = collective.team[0]
    shard = (target if collective.kind is hir.ReduceScatterOp else source).local_shape(member)
    if shard is None or DYNAMIC in shard:
        return False
    link_bytes = math.prod(shard) * source.element_bytes()
    name = collective.kind.name
    return machine.collective_ms(name, True, link_bytes) <= machine.collective_ms(name, False, link_bytes)


def copy_engine_problem(op: Operation, plan: list[Collective]) -> str | None:
    """Why the copy-engine transport cannot carry `op`'s communication (None if it can)."""
    if len(plan) != 1 or not plan[0].kind.HAS_COPY_ENGINE_ALGORITHM:
        return "only a single allgather, reduce_scatter or allreduce has a copy-engine algorithm"
    mesh = tensor_type(op.operands[0]).mesh
    if mesh is None or mesh.ndim != 1 or plan[0].team != mesh.devices or len(plan[0].team) < 2:
        return "its team must be a whole 1-D mesh of several devices (symmetric buffers span a mesh)"
    loops = _enclosing_loops(op)
    if len(loops) > 1 or (loops and _trip_count(loops[0]) is None):
        return "it must be at the top level or in one loop with constant bounds from 0 by 1"
    if plan[0].kind is hir.AllgatherOp:
        return _gathered_buffer_problem(op)
    local_input = tensor_type(op.operands[0]).local_shape(plan[0].team[0])
    if local_input is None or DYNAMIC in local_input:
        return "its input's shape must be static (symmetric buffers are sized when the program is lowered)"
    return plan[0].kind.copy_engine_input_problem(math.prod(local_input), len(plan[0].team))


def _enclosing_loops(op: Operation) -> list[scf.ForOp]:
    loops, parent = [], op.parent_op()
    while parent is not None and not isinstance(parent, hir.ProgramOp):
        if isinstance(parent, scf.ForOp):
            loops.append(parent)
        parent = parent.parent_op()
    return loops


def _constant(value: SSAValue) -> int | None:
    owner = value.owner
    if isinstance(owner, arith.ConstantOp) and isinstance(owner.value, IntegerAttr):
        return owner.value.value.data
    return None


def _trip_count(loop: scf.ForOp) -> int | None:
    """The iterations of a loop `0 to N step 1` with a constant N (None otherwise)."""
    if _constant(loop.lb) != 0 or _constant(loop.step) != 1:
        return None
    return _constant(loop.ub)


def _buffer_root(value: SSAValue) -> SSAValue:
    """The buffer a view (`hir.alias_select` chain) is of."""
    while isinstance(value.owner, hir.AliasSelectOp):
        value = value.owner.input
    return value


def _is_returned(buffer: SSAValue) -> bool:
    """Does the program return `buffer` or a view of it?"""
    for use in buffer.uses:
        if isinstance(use.operation, hir.ReturnOp):
            return True
        if isinstance(use.operation, hir.AliasSelectOp) and _is_returned(use.operation.result):
            return True
    return False


def _gathered_buffer_problem(op: Operation) -> str | None:
    """An all-gather writes into every member's output: it must be a buffer the program
    allocates (a symmetric one, reused by every run), which it does not return."""
    destination = op.operands[-1] if isinstance(op, fusion.ComputeOp) and op.out is not None else None
    if destination is None:
        return None if not _is_returned(op.results[0]) else "its output is a program output"
    root = _buffer_root(destination)
    if not isinstance(root.owner, hir.AllocateOp):
        return "its output is not a buffer the program allocates"
    if _is_returned(root):
        return "its output is a program output"
    return None


def copy_engine_via(op: Operation, kind: type[hir.CollectiveOp], team: tuple[int, ...], rewriter: PatternRewriter) -> SSAValue:
    """The symmetric `via` buffer of a copy-engine reduce-scatter or all-reduce: allocated
    before the op's loop with one slice per iteration (before the op at the top level)."""
    source = tensor_type(op.operands[0])
    chunk_axes = [a for a in source.axes if not a.is_reduction]
    if kind is hir.AllreduceOp:
        chunk_axes = [Axis(2), *chunk_axes]  # input chunks, then reduced chunks
    loops = _enclosing_loops(op)
    axes = ([Axis(_trip_count(loops[0]))] if loops else []) + chunk_axes
    allocate = located_like(hir.AllocateOp(TensorType.of(source.element_type, axes, source.mesh), symmetric=True), op)
    allocate.result.name_hint = "via"
    if not loops:
        rewriter.insert(allocate, InsertPoint.before(op))
        return allocate.result
    Rewriter.insert_op(allocate, InsertPoint.before(loops[0]))
    view = located_like(hir.AliasSelectOp(
        allocate.result, loops[0].body.block.args[0], 0, TensorType.of(source.element_type, chunk_axes, source.mesh)
    ), op)
    view.result.name_hint = "via_i"
    rewriter.insert(view, InsertPoint.before(op))
    return view.result


def make_symmetric(buffer: SSAValue) -> None:
    """The allocation of the buffer `buffer` views becomes symmetric."""
    allocate = _buffer_root(buffer).owner
    assert isinstance(allocate, hir.AllocateOp)
    allocate.properties["symmetric"] = UnitAttr()


# --------------------------------------------------------------------------- #
# The rewrite
# --------------------------------------------------------------------------- #


@dataclass(frozen=True)
class Plan:
    """What one communicating op becomes: its collectives, on one transport."""

    collectives: list[Collective]
    transport: hir.Transport


class ConvertToCollectives(RewritePattern):
    """%r = fusion.set|reduce %x (into %d)? : P -> C   (communicating, planned)
    ->  %d = hir.allocate (symmetric)? : C            (unless the op had a destination)
        (%v = a slice of a symmetric via buffer)        (copy-engine reduce-scatter, all-reduce)
        %w = hir.<collective> %x -> %d (via %v)? team [..] (root ..)? (op ..)? (transport T)?
        hir.wait %w                                    (once per planned collective)
    and every use of %r reads %d."""

    def __init__(self, plans: dict[Operation, Plan]):
        self.plans = plans

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: fusion.SetOp | fusion.ReduceOp, rewriter: PatternRewriter) -> None:
        plan = self.plans.get(op)
        if plan is None:
            return
        copy_engine = plan.transport == hir.Transport.COPY_ENGINE
        new_ops: list[Operation] = []
        buffer = op.out
        if buffer is None:
            allocate = located_like(hir.AllocateOp(tensor_type(op.result)), op)
            allocate.result.name_hint = op.result.name_hint
            new_ops.append(allocate)
            buffer = allocate.result
        reduction = op.kind.data if isinstance(op, fusion.ReduceOp) else None
        for c in plan.collectives:
            via = None
            if copy_engine and c.kind is hir.AllgatherOp:
                rewriter.insert(new_ops, InsertPoint.before(op))
                new_ops = []
                make_symmetric(buffer)
            elif copy_engine:
                via = copy_engine_via(op, c.kind, c.team, rewriter)
            collective = located_like(c.kind(
                op.input, buffer, c.team, root=c.root, reduction=reduction, transport=plan.transport, via=via,
            ), op)
            collective.work.name_hint = "w"
            new_ops += [collective, located_like(hir.WaitOp(collective.work), op)]
        rewriter.replace(op, new_ops, [buffer])


@dataclass(frozen=True)
class ConvertOpToCommunication(ModulePass):
    """Turn each communicating set or reduce of a host program into collectives and waits."""

    name = "convert-op-to-communication"

    transport: str = "nccl"
    """nccl (the world's collective library), copy-engine, or auto (docs/copy_engine.md)."""

    machine: str = DEFAULT_MACHINE
    """The cost model `auto` decides with (passes/machines/<machine>.json)."""

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        if self.transport not in set(TransportChoice):
            raise ValueError(f"unknown transport {self.transport!r}; expected one of {', '.join(TransportChoice)}")
        choice = TransportChoice(self.transport)
        machine = Machine.load(self.machine)
        host_programs = programs(op)
        if not host_programs:
            raise op_error(op, "holds no hir.program to convert; run lower-to-host first")
        plans: dict[Operation, Plan] = {}
        for program in host_programs:
            for inner in program.walk():
                if isinstance(inner, fusion.ComputeOp) and communicates(inner):
                    collectives = plan_communication(inner)
                    plans[inner] = Plan(collectives, choose_transport(inner, collectives, choice, machine))
        PatternRewriteWalker(ConvertToCollectives(plans), apply_recursively=False).rewrite_module(op)
