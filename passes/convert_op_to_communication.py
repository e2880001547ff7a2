"""`convert-op-to-communication`: every communicating `fusion.set` / `fusion.reduce` of a
host program (top level or in `scf.for` bodies at any depth) becomes its destination
buffer + collectives, each followed by `hir.wait` (nvFuser's ConvertOpToCommunication
and convertSingleOpToCommunication: csrc/host_ir/pass/convert_op_to_communication.cpp,
csrc/host_ir/lower_to_communication.cpp).

Decision table, along the one device type P the op changes (DIDx or DIDy; DIDx when only
the mesh changes). in/out sharded = sharded along P over more than one device:

    op      in   out  meshes     collectives
    set     no   yes  same       local_shard on each P-slice of the mesh (nothing moves)
    set     no   yes  different  scatter, root = first sender device in the receiver mesh
    set     yes  no   same       allgather on each P-slice
    set     yes  no   different  gather, one per receiving device
    set     yes  yes  same axis  send_recv, sender_mesh[i] -> receiver_mesh[i]
    set     yes  yes  same mesh  all_to_all on each P-slice (the sharded axis moves)
    set     no   no   different  broadcast from sender_mesh[0]
    reduce  yes  yes  same       reduce_scatter on each P-slice
    reduce  yes  no   same       allreduce on each P-slice
    reduce  yes  no   different  reduce, one per receiving device (root)

Teams on 2-D meshes. nvFuser gives a collective the team `mesh.getSlice(my_rank, P)`,
which depends on the rank. Our program text is the same on every rank, and so is the
collective's team: the mesh sliced along P (`team [[0, 1], [2, 3]] along didx`, MLIR
shard's grid axes), which each rank resolves to its own slice, its mesh row along DIDx,
its column along DIDy; a rooted one's root is a position in the slice. So the program has
one collective whatever the number of slices. Rows marked "different" need 1-D meshes. An
op that changes both DIDx and DIDy is two communications (decompose-reshardings splits
it). A device type along a mesh axis of one device moves nothing (sharding.py): no
collective on a team of one is planned.

Buffers are the flattened local tensors (the buffer contracts of runtime/communicator.py):
`sharding_policy.layout_problem` says when they are not laid out as the collective needs
(reorder-sharded-axis arranges them in the `hostir-lower` pipeline).

Transport (option `transport=nccl|copy-engine|auto`, docs/copy_engine.md): an all-gather,
reduce-scatter or all-reduce over a whole 1-D mesh, at the top level or in one loop with
constant bounds, can run on the copy engines. Its all-gather output buffer then becomes
`hir.allocate symmetric`, and a reduce-scatter or all-reduce gets a symmetric `via`
buffer, allocated before the loop with one slice per iteration. With
`symmetric-allreduce-output` (on by default), an all-reduce's output becomes symmetric too where it is
allocated once per run (the members push their reduced chunks into each other's outputs;
`symmetric_output`). A team that spans nodes
(option `ranks-per-node`, by default torchrun's LOCAL_WORLD_SIZE; docs/multi_node.md)
stays on NCCL: copy engines reach one node. `copy-engine` refuses, located, a collective
that cannot; `auto` takes the copy engines where they can carry the collective and the
cost model (passes/cost_model.py) says they are faster, posted as often as its loop runs,
beside the loop's matmuls (docs/copy_engine.md, "Choosing").
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects import scf
from xdsl.dialects.builtin import ModuleOp
from xdsl.ir import Operation, SSAValue
from xdsl.passes import ModulePass
from xdsl.pattern_rewriter import PatternRewriter, RewritePattern, op_type_rewrite_pattern
from xdsl.rewriter import InsertPoint

from hostir_dialect import fusion, hir
from hostir_dialect.copy_engine_facts import copy_engine_algorithm
from hostir_dialect.diagnostics import located_like, op_error
from hostir_dialect.remarks import remark
from hostir_dialect.sharding import communicates
from hostir_dialect.symbols import programs
from hostir_dialect.tensor_type import DYNAMIC, Axis, Mesh, ParallelKind, TensorType, tensor_type

from .cost_model import DEFAULT_MACHINE, Machine, Topology, TransportChoice, matmul_flops
from .sharding_policy import (
    Exchange,
    buffer_order,
    communicated_type,
    device_parallel_reduced_axes,
    layout_problem,
    sharding_changes,
    shards_locally,
    team_along,
    unlowerable_inner_split,
)
from .stream_loops import enclosing_loops, trip_count
from .symmetric_buffers import make_symmetric, returned_aliases, symmetric_output, symmetric_slice_per_iteration


@dataclass(frozen=True)
class Collective:
    """One collective to post: the op class, its team and root (as the op says them)."""

    kind: type[hir.CollectiveOp]
    team: hir.Team
    root: int | None = None


@dataclass(frozen=True)
class LocalShard:
    """Each member of the team keeping its part of a tensor it holds whole
    (`hir.local_shard`): no communication, no transport, nothing to wait for."""

    team: hir.Team


Step = Collective | LocalShard
"""What a communicating op becomes, one per team."""


# --------------------------------------------------------------------------- #
# The decision (plain functions; they raise the located diagnostics)
# --------------------------------------------------------------------------- #


def plan_communication(op: Operation) -> list[Step]:
    """The collectives (or local shards) that implement the communicating op `op`, in
    posting order."""
    if not isinstance(op, (fusion.SetOp, fusion.ReduceOp)):
        raise op_error(op, "computes as well as moves data between devices, which is not one communication; run decompose-reshardings first")
    source, target = tensor_type(op.input), tensor_type(op.result)
    sender, receiver = source.mesh, target.mesh
    if sender is None or receiver is None:
        raise op_error(op, "reshards between a tensor with a device mesh and one without; run propagate-shardings first")
    _check_parallelization(op, source, target)
    for role, t in (("input", source), ("result", target)):
        if t.stream_allocated:  # in a stream loop, the op communicates chunks, of chunk types
            raise op_error(op, f"its {role} is stream-allocated (one chunk at a time) outside any stream loop, "
                               "where a collective moves whole buffers; run stream-parallel-type first")
    parallel = communicated_type(op)
    in_sharded, out_sharded = source.is_spread(parallel), target.is_spread(parallel)
    if isinstance(op, fusion.ReduceOp) and not in_sharded and sender.size > 1:
        raise op_error(op, "the comm input must be sharded in case of reduce. Insert a `set` before the reduction to reshard")
    plan: list[Step]
    if isinstance(op, fusion.ReduceOp):
        _check_reduces_only_device_axis(op)
        plan = list(_plan_reduce(op, parallel, sender, receiver, out_sharded))
    else:
        plan = _plan_set(op, parallel, sender, receiver, in_sharded, out_sharded)
    if shards_locally(op):
        return plan  # copies from a view of its own input: no buffer contract
    problem = layout_problem(op) or _chunk_problem(op)
    if problem is not None:
        raise op_error(op, problem)
    return plan


def _chunk_problem(op: fusion.SetOp | fusion.ReduceOp) -> str | None:
    """Why a stream loop's chunk that `op` communicates is not one contiguous run of its
    buffer (collectives need dense buffers; reorder-sharded-axis puts the loop's axis first)."""
    for value in (op.input, op.out):
        select = value.owner if value is not None else None
        if not isinstance(select, hir.AliasViewOp):
            continue
        whole = tensor_type(select.input)
        if select.axis_index in buffer_order(whole, {a: a for a in range(whole.rank)})[1:]:
            return (f"communicates chunks of a stream loop over axis {select.axis_index} that are not contiguous "
                    "in their buffer: that axis must be allocated outermost (reorder-sharded-axis makes it so)")
    return None


def _plan_set(
    op: fusion.SetOp, parallel: ParallelKind, sender: Mesh, receiver: Mesh, in_sharded: bool, out_sharded: bool
) -> list[Step]:
    if not in_sharded and out_sharded:
        if sender == receiver:
            return [LocalShard(team_along(receiver, parallel))]
        _check_1d(op, receiver, "Scatter only supported on a 1D mesh")
        root = _first_in_both(sender, receiver)
        if root is None:
            raise op_error(op, f"No common device found between the sender mesh {sender} and the receiver mesh {receiver}: scatter needs its root in both")
        return [Collective(hir.ScatterOp, hir.Team.of(receiver.devices), root)]
    if in_sharded and not out_sharded:
        if sender == receiver:
            return [Collective(hir.AllgatherOp, team_along(sender, parallel))]
        _check_1d(op, sender, "Gather only supported on a 1D mesh")
        return [Collective(hir.GatherOp, _with(sender.devices, root), root) for root in receiver.devices]
    if in_sharded and out_sharded:
        exchange = Exchange.of(op)
        if exchange.scattered is not None:
            if sender != receiver:
                raise op_error(op, f"reshards from axis {exchange.gathered} to axis {exchange.scattered} (an all-to-all) between different meshes ({sender} and {receiver}), which is not lowerable")
            return [Collective(hir.AllToAllOp, team_along(sender, parallel))]
        _check_1d(op, sender, "SendRecv only supported on 1D meshes")
        _check_1d(op, receiver, "SendRecv only supported on 1D meshes")
        if sender.size != receiver.size:
            raise op_error(op, f"the receiver and sender meshes have different sizes ({receiver} and {sender}); send_recv pairs them device by device")
        return [
            Collective(hir.SendRecvOp, hir.Team.of((s,) if s == r else (s, r)), s)
            for s, r in zip(sender.devices, receiver.devices)
        ]
    # Neither side is parallelized along any device type (a mesh change counts every type
    # either side is parallelized on as changed), so every device holds all of it and the
    # team is a list of devices, whatever the meshes' shapes. A root among the receivers
    # moves nothing to itself (a receiving mesh within the sending one: a local copy).
    common = _first_in_both(sender, receiver)
    root = sender.devices[0] if common is None else common
    return [Collective(hir.BroadcastOp, _with(receiver.devices, root), root)]


def _first_in_both(sender: Mesh, receiver: Mesh) -> int | None:
    """The first sending device that also receives, if any: as a root it sends itself nothing."""
    return next((d for d in sender.devices if d in receiver.devices), None)


def _plan_reduce(
    op: fusion.ReduceOp, parallel: ParallelKind, sender: Mesh, receiver: Mesh, out_sharded: bool
) -> list[Collective]:
    if out_sharded:
        if sender != receiver:
            raise op_error(op, f"ReduceScatter operation must have the same sender and receiver device mesh, got {sender} and {receiver}")
        return [Collective(hir.ReduceScatterOp, team_along(sender, parallel))]
    if sender == receiver:
        return [Collective(hir.AllreduceOp, team_along(sender, parallel))]
    _check_1d(op, sender, "Reduce only supported a 1D mesh")
    return [Collective(hir.ReduceOp, _with(sender.devices, root), root) for root in receiver.devices]


def _with(team: tuple[int, ...], device: int) -> hir.Team:
    return hir.Team.of(team if device in team else (*team, device))


def _check_1d(op: Operation, mesh: Mesh, message: str) -> None:
    if mesh.ndim != 1:
        raise op_error(op, f"{message}, got mesh {mesh}")


_SPELLED = {ParallelKind.DIDX: "DIDx", ParallelKind.DIDY: "DIDy", ParallelKind.DIDZ: "DIDz"}


def _check_parallelization(op: fusion.SetOp | fusion.ReduceOp, source: TensorType, target: TensorType) -> None:
    """Device types only on outer splits (or behind device pieces both sides of a set
    share), and one type changing at a time (nvFuser rejects the rest too)."""
    unlowerable = unlowerable_inner_split(op)
    if unlowerable is not None:
        index, parallel, t = unlowerable
        raise op_error(op, f"{_SPELLED[parallel]} on an inner split (axis {index} of {t}) is not lowerable; split the axis outer")
    changed = sharding_changes(source, target, op.axis_map(op.input))
    if len(changed) > 1:
        raise op_error(op, f"changes more than one parallel type ({', '.join(changed)}), which is more than one communication; run decompose-reshardings first")


def _check_reduces_only_device_axis(op: fusion.ReduceOp) -> None:
    """One communication reduces across devices only: the reduced axis must be the
    device-parallel axis, not split locally. A local part has to be reduced first (rFactor)."""
    if device_parallel_reduced_axes(op) != op.reduced_axes() or len(op.reduced_axes()) != 1:
        raise op_error(op, "reduces local data as well as across devices, which is not one communication; run decompose-reshardings first")
    axis = tensor_type(op.input).value_axes()[op.reduced_axes()[0]]
    if axis.is_split:
        raise op_error(op, "reduces a split device-parallel axis (a local part as well), which is not one communication; run decompose-reshardings first")


# --------------------------------------------------------------------------- #
# The transport
# --------------------------------------------------------------------------- #


def choose_transport(op: Operation, steps: list[Step], choice: TransportChoice, machine: Machine,
                     topology: Topology) -> hir.Transport:
    plan = [step for step in steps if isinstance(step, Collective)]
    if choice == TransportChoice.NCCL or not plan:  # local shards take no transport
        return hir.Transport.NCCL
    problem = copy_engine_problem(op, plan) or topology.copy_engine_problem(plan[0].team.devices)
    if choice == TransportChoice.COPY_ENGINE:
        if problem is not None:
            raise op_error(op, f"cannot communicate on the copy engines: {problem}")
        return hir.Transport.COPY_ENGINE
    if problem is None:
        loops = enclosing_loops(op)  # copy_engine_problem allows one, with a constant trip count
        posts = trip_count(loops[0]) if loops else 1
        assert posts is not None
        beside = posts * _matmuls_ms(loops[0], machine) if loops else 0.0
        kind, size, team_size = plan[0].kind, input_bytes(op, plan[0].team.devices[0]), plan[0].team.size
        if (unpriced := machine.copy_engines_unpriced(kind, team_size)) is not None:
            remark(op, ConvertOpToCommunication.name, f"{kind.name} on {hir.Transport.NCCL}: {unpriced}")
            return hir.Transport.NCCL
        chosen = machine.fastest_transport(kind, size, team_size, posts, beside)
        other = next(t for t in hir.Transport if t != chosen)
        remark(op, ConvertOpToCommunication.name,
               f"{kind.name} on {chosen}: estimated {machine.beside_ms(kind, chosen, size, team_size, posts, beside):.3f} ms "
               f"vs {machine.beside_ms(kind, other, size, team_size, posts, beside):.3f} ms on {other} ({posts} post(s)"
               + (f" beside {beside:.3f} ms of matmuls)" if beside else ")"))
        return chosen
    remark(op, ConvertOpToCommunication.name, f"{plan[0].kind.name if len(plan) == 1 else 'communication'} on "
                                              f"{hir.Transport.NCCL}: the copy engines cannot carry it: {problem}")
    return hir.Transport.NCCL


def _matmuls_ms(loop: scf.ForOp, machine: Machine) -> float:
    """The matmuls of one iteration of `loop`: what runs beside its collectives."""
    total = 0.0
    for op in loop.body.walk():
        if isinstance(op, (fusion.MatmulOp, fusion.LinearOp)):
            result = tensor_type(op.result)
            flops = matmul_flops(result)
            total += 0.0 if flops is None else machine.matmul_ms(flops, str(result.element_type))
    return total


def input_bytes(op: Operation, member: int) -> int:
    """Bytes of `op`'s input on `member` (static: copy_engine_problem has checked)."""
    source = tensor_type(op.operands[0])
    shape = source.local_shape(member)
    assert shape is not None  # the team is the input's whole mesh (copy_engine_problem), so it holds `member`
    return math.prod(shape) * source.element_bytes()


def copy_engine_problem(op: Operation, plan: list[Collective]) -> str | None:
    """Why the copy-engine transport cannot carry `op`'s communication (None if it can)."""
    algorithm = copy_engine_algorithm(plan[0].kind.name) if len(plan) == 1 else None
    if algorithm is None:
        return "only a single allgather, reduce_scatter or allreduce has a copy-engine algorithm"
    mesh, team = tensor_type(op.operands[0]).mesh, plan[0].team
    if mesh is None or mesh.ndim != 1 or team.devices != mesh.devices or team.size < 2:
        return "its team must be a whole 1-D mesh of several devices (symmetric buffers span a mesh)"
    loops = enclosing_loops(op)
    if len(loops) > 1 or (loops and trip_count(loops[0]) is None):
        return "it must be at the top level or in one loop with constant bounds from 0 by 1"
    local_input = tensor_type(op.operands[0]).local_shape(team.devices[0])
    if local_input is None or DYNAMIC in local_input:
        return "its input's shape must be static (symmetric buffers are sized when the program is lowered)"
    local_output = tensor_type(op.results[0]).local_shape(team.devices[0])
    if local_output is None or DYNAMIC in local_output:
        # A device-parallel axis of dynamic extent holds one element per member, so the
        # input of an all-gather can be static where its gathered output is not.
        return "its output's shape must be static (symmetric buffers are sized when the program is lowered)"
    if plan[0].kind is hir.AllgatherOp:
        return _gathered_buffer_problem(op)
    return algorithm.input_problem(math.prod(local_input), team.size)


def _is_returned(buffer: SSAValue) -> bool:
    """Does the program return `buffer`, or a value sharing its memory?"""
    return bool(returned_aliases(buffer))


def _gathered_buffer_problem(op: Operation) -> str | None:
    """An all-gather writes into every member's output: it must be a buffer the program
    allocates (a symmetric one, reused by every run), which it does not return."""
    destination = op.operands[-1] if isinstance(op, fusion.ComputeOp) and op.out is not None else None
    if destination is None:
        return None if not _is_returned(op.results[0]) else "its output is a program output"
    root = hir.view_root(destination)
    if not isinstance(root.owner, hir.AllocateOp):
        return "its output is not a buffer the program allocates"
    if _is_returned(root):
        return "its output is a program output"
    if enclosing_loops(root.owner) not in ([], enclosing_loops(op)):
        return "its output is allocated in a loop that is not the collective's"
    return None


def copy_engine_via(op: Operation, kind: type[hir.CollectiveOp], output: SSAValue, rewriter: PatternRewriter) -> SSAValue:
    """The symmetric `via` buffer of a copy-engine reduce-scatter or all-reduce (into
    `output`): allocated before the op's loop with one slice per iteration (before the op
    at the top level)."""
    source = tensor_type(op.operands[0])
    chunk_axes = [a for a in source.axes if not a.is_reduction]
    if kind is hir.AllreduceOp and not hir.views_symmetric_buffer(output):
        chunk_axes = [Axis(2), *chunk_axes]  # input chunks, then reduced chunks
    chunk = TensorType.of(source.element_type, chunk_axes, source.mesh)
    loops = enclosing_loops(op)
    if not loops:
        allocate = located_like(hir.AllocateOp(chunk, symmetric=True), op)
        allocate.result.name_hint = "via"
        rewriter.insert(allocate, InsertPoint.before(op))
        return allocate.result
    view = symmetric_slice_per_iteration(chunk, loops[0], op, "via")
    rewriter.insert(view, InsertPoint.before(op))
    return view.result


# --------------------------------------------------------------------------- #
# The rewrite
# --------------------------------------------------------------------------- #


def allocate_result(op: fusion.SetOp | fusion.ReduceOp) -> list[Operation]:
    """The `hir.allocate` of `op`'s result, after a `hir.extent` of each input axis that
    gives a dynamic value axis of the result its extent (a set or reduce keeps the extent
    of every axis it does not reduce). Only where every rank holding the result holds the
    input: elsewhere the allocation has no extents, which the runtime refuses if it
    needs them."""
    source, result = tensor_type(op.input), tensor_type(op.result)
    to_source = {target: axis for axis, target in op.axis_map(op.input).items()}
    dynamic = result.dynamic_value_axes()
    extents: list[Operation] = []
    if _holds_input_wherever_result(source, result) and all(a in to_source for a in dynamic):
        extents = [located_like(hir.ExtentOp(op.input, to_source[a]), op) for a in dynamic]
        for extent in extents:
            extent.results[0].name_hint = "extent"
    allocate = located_like(hir.AllocateOp(result, extents=[e.results[0] for e in extents]), op)
    return [*extents, allocate]


def _holds_input_wherever_result(source: TensorType, result: TensorType) -> bool:
    if source.mesh is None or result.mesh is None:
        return source.mesh == result.mesh
    return set(result.mesh.devices) <= set(source.mesh.devices)


@dataclass(frozen=True)
class Plan:
    """What one communicating op becomes: its collectives (or local shards), on one transport."""

    collectives: list[Step]
    transport: hir.Transport


class ConvertToCollectives(RewritePattern):
    """%r = fusion.set|reduce %x (into %d)? : P -> C   (communicating, planned)
    ->  %d = hir.allocate (symmetric)? : C            (unless the op had a destination)
        (%v = a slice of a symmetric via buffer)        (copy-engine reduce-scatter, all-reduce)
        %w = hir.<collective> %x -> %d (via %v)? team [..] (root ..)? (op ..)? (transport T)?
        hir.wait %w                                    (once per planned collective)
    and every use of %r reads %d."""

    def __init__(self, plans: dict[Operation, Plan], symmetric_allreduce_output: bool = False):
        self.plans = plans
        self.symmetric_allreduce_output = symmetric_allreduce_output

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: fusion.SetOp | fusion.ReduceOp, rewriter: PatternRewriter) -> None:
        plan = self.plans.get(op)
        if plan is None:
            return
        copy_engine = plan.transport == hir.Transport.COPY_ENGINE
        new_ops: list[Operation] = []
        buffer = op.out
        if buffer is None:
            new_ops = allocate_result(op)
            buffer = new_ops[-1].results[0]
            buffer.name_hint = op.result.name_hint
        reduction = op.kind.data if isinstance(op, fusion.ReduceOp) else None
        for c in plan.collectives:
            if isinstance(c, LocalShard):
                axis = Exchange.of(op).scattered
                assert axis is not None
                new_ops.append(located_like(hir.LocalShardOp(op.input, buffer, axis, c.team), op))
                continue
            via = None
            if copy_engine and c.kind is hir.AllgatherOp:
                rewriter.insert(new_ops, InsertPoint.before(op))
                new_ops = []
                buffer = make_symmetric(buffer)
            elif copy_engine:
                if c.kind is hir.AllreduceOp and self.symmetric_allreduce_output:
                    rewriter.insert(new_ops, InsertPoint.before(op))
                    new_ops = []
                    buffer = symmetric_output(buffer)
                via = copy_engine_via(op, c.kind, buffer, rewriter)
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
    """The cost model `auto` decides with: `detect` (this machine's GPUs), or a name (passes/cost_model.py)."""

    cuda_graph: bool = False
    """`auto` prices the program as replayed from a CUDA graph (`Machine.replayed`), as
    `choose-pipelining` does with the same option."""

    ranks_per_node: int = 0
    """Ranks per node, where copy engines end (docs/multi_node.md); 0: torchrun's
    LOCAL_WORLD_SIZE, or one node when it is not set."""

    symmetric_allreduce_output: bool = True
    """A copy-engine all-reduce's output becomes symmetric where it is allocated once per
    run, and its members push their reduced chunks into each other's outputs; a returned
    one is a result set (`symmetric_output`). On by default: it saves the
    copy out of the `via` buffer (docs/copy_engine.md, measured there)."""

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        if self.transport not in set(TransportChoice):
            raise ValueError(f"unknown transport {self.transport!r}; expected one of {', '.join(TransportChoice)}")
        choice = TransportChoice(self.transport)
        machine, topology = Machine.load(self.machine), Topology.of(self.ranks_per_node)
        machine = machine.replayed() if self.cuda_graph else machine
        host_programs = programs(op)
        if not host_programs:
            raise op_error(op, "holds no hir.program to convert; run lower-to-host first")
        plans: dict[Operation, Plan] = {}
        for program in host_programs:
            for inner in program.walk():
                if isinstance(inner, fusion.ComputeOp) and communicates(inner):
                    collectives = plan_communication(inner)
                    plans[inner] = Plan(collectives, choose_transport(inner, collectives, choice, machine, topology))
        convert = ConvertToCollectives(plans, self.symmetric_allreduce_output)
        for planned in plans:  # the ops to rewrite are known: no walk of the whole module for them
            convert.match_and_rewrite(planned, PatternRewriter(planned))
