"""`split-by-member`: split the compute around a copy-engine collective by team member,
so that each member's part overlaps the transfers of the others (docs/copy_engine.md).

A copy-engine collective is posted on its own stream and waited for on the current one.
Computed whole, the op that consumes an all-gather waits for every member's part, and the
op that produces a reduce-scatter's input must finish before any transfer starts: the
transfers and the compute serialize. Split by member:

- all-gather, then an op reading its output (own part first, read from the input in
  place, so the post need not copy it into the output: `peers_only`; then each other
  member's part as soon as it has arrived, positions rotating from this rank's own; then
  the whole wait, for this rank's own pushes, which read the input):

      %w = hir.allgather %x -> %g ... transport copy_engine       %w = hir.allgather %x -> %g ... peers_only
      hir.wait %w                                          ->      fusion.matmul %x[%me], %b into %c[%me]
      %r = fusion.matmul %g, %b into %c                            scf.for %s = 1 to D {
                                                                     %p = (me + s) mod D
                                                                     hir.wait %w from %p
                                                                     fusion.matmul %g[%p], %b into %c[%p]
                                                                   }
                                                                   hir.wait %w

  Where the input's part cannot be read in place (its member axis is not the axis
  sharded across the team), the loop starts at the own part (`%s = 0`), which the post
  copies into the output.

- an op writing a reduce-scatter's or all-reduce's input (the other members' chunks first,
  then the post, which reads only those, then this rank's own chunk while the copies run):

      %u = fusion.matmul %a, %b into %ub                  scf.for %s = 1 to D {
      %w = hir.reduce_scatter %ub -> %c via %r ...  ->      %p = (me + s) mod D
      hir.wait %w                                           fusion.matmul %a[%p], %b[%p] into %ub[%p]
                                                          }
                                                          %w = hir.reduce_scatter %ub -> %c via %r ...
                                                          fusion.matmul %a[me], %b[me] into %ub[me]
                                                          hir.wait %w

`%g[%p]` is `hir.alias_select` on the axis that holds the members' parts: the outermost
allocated axis with a local extent above 1 (the collectives' buffer contract), when its
extent is the team size; `%x[%me]` selects this rank's own shard of the input's
device-sharded axis. An all-reduce's members' chunks are any D equal contiguous blocks of
its buffer, so its producer also splits where D divides that axis's extent, part p being
`hir.alias_chunk ... parts D` (block p): a pipeline that choose-pipelining dropped leaves
its chunks outermost, and the whole run still computes the others' blocks first. The op
must be computable part by part along it (the `StreamSliceable` interface, as for stream
chunks), each part of every operand it splits one contiguous block (a strided part would
be copied before a matmul reads it); an op that allocates its result gets a buffer for
its parts. Anything else is left as it is: the split is an optimization, never needed for
a correct result.

With `reduce-in-producer` (on by default), an all-reduce whose producer is a matmul by one
matrix takes the own part's operands instead of the own part being computed
(`own_product`), where it is in a loop of more than one iteration, whose later chunks
compute meanwhile (`beside_later_chunks`). With `reduce-scatter-in-producer` (off by
default: measured faster on some pipelines and slower on others, docs/copy_engine.md), a
reduce-scatter does the same where its output can be made symmetric, so that the lead's
part lands in it (on a team of two, no `via` is left):

      %w = hir.allreduce %ub -> %c via %r own(%a[me], %b) ...
      hir.wait %w                       (phase 2: %c[me] = %a[me] @ %b + the others' parts)

      %w = hir.reduce_scatter %ub -> %c own(%a[me], %b) ...     (%c symmetric)
      hir.wait %w                       (%c = %a[me] @ %b + the others' parts)
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace

from xdsl.context import Context
from xdsl.dialects import arith, scf
from xdsl.dialects.builtin import ModuleOp, UnitAttr
from xdsl.ir import Block, Operation, Region, SSAValue
from xdsl.passes import ModulePass
from xdsl.rewriter import InsertPoint, Rewriter
from xdsl.utils.exceptions import VerifyException

from hostir_dialect import fusion, hir
from hostir_dialect.attributes import INDEX
from hostir_dialect.building import index_constant
from hostir_dialect.copy_engine_facts import copy_engine_algorithm
from hostir_dialect.diagnostics import located_like
from hostir_dialect.symbols import programs
from hostir_dialect.tensor_type import DYNAMIC, TensorType, tensor_type

from .chunking import SELECTED, ChunkForm, Narrowed, narrowed_operand_axes, operand_axis
from .stream_loops import enclosing_loops, trip_count
from .symmetric_buffers import can_be_symmetric_output, make_symmetric


def outermost_axis(t: TensorType) -> int | None:
    """The outermost allocated axis of `t` with a local extent above 1 (a reduction axis
    has no storage): each part of `t` along it is one contiguous block of its buffer."""
    return next((a for a in t.allocation_order() if not t.axes[a].is_reduction and t.local_extent(a) != 1), None)


def member_parts(t: TensorType, team_size: int, any_blocks: bool = False) -> tuple[int, list[ChunkForm]] | None:
    """The logical axis along which a collective's flat buffer holds the team members'
    chunks, its `outermost_axis`, and the ways a member's chunk may be taken along it, in
    order of preference (None: there are none): selected, where its extent is the team
    size; with `any_blocks`, also narrowed to one of D equal blocks where D divides its
    extent. An all-reduce may take that: any D equal contiguous blocks of its buffer are
    its members' chunks (its result is whole), so a whole run whose outermost axis holds
    the chunks of a dropped pipeline splits too, and so do a matmul's rows, which
    selecting would take away."""
    axis = outermost_axis(t)
    if axis is None:
        return None
    chosen = t.axes[axis]
    forms: list[ChunkForm] = [SELECTED] if chosen.extent == team_size and not chosen.is_split else []
    if any_blocks and not chosen.is_split and not chosen.parallel_types() and chosen.extent != DYNAMIC \
            and chosen.extent % team_size == 0:
        forms.append(Narrowed(team_size))
    return (axis, forms) if forms else None


@dataclass(frozen=True)
class MemberSplit:
    """An op computed one team member's part at a time along axis `axis` of its result,
    each part taken in `form` (`member_parts`) and written into `destination`."""

    op: fusion.ComputeOp
    axis: int
    parted: dict[SSAValue, int]
    """Operand -> its logical axis that maps to `axis` (read part by part); other operands are whole."""
    form: ChunkForm
    destination: SSAValue
    """The op's destination; for an op that allocates its result, a stand-in of its type
    until `allocated` allocates the buffer the parts write."""

    @staticmethod
    def of(op: Operation, result_axis: int | None, form: ChunkForm = SELECTED) -> MemberSplit | None:
        """The split of `op` along `result_axis`, if `op` can be computed part by part."""
        if result_axis is None or not isinstance(op, fusion.StreamSliceable) or not isinstance(op, fusion.ComputeOp):
            return None
        parted = _parted_operands(op, result_axis, form)
        if not parted or any(tensor_type(v).axes[a].parallel_types() for v, a in parted.items()):
            return None
        # A part that is not one block of its operand's buffer (nor of a broadcast axis,
        # read whole) is a strided view, which a matmul copies first (torch folds batch
        # axes into rows only where contiguous): split so, a whole run's matmul + reduce-
        # scatter whose member rows sit inside the S chunks took 20 µs longer
        # (16384x8192x1024 at S = 8 on 2x H200).
        if any(not tensor_type(v).axes[a].is_broadcast and outermost_axis(tensor_type(v)) != a
               for v, a in parted.items()):
            return None
        destination = op.out if op.out is not None else Block(arg_types=[op.result.type]).args[0]
        split = MemberSplit(op, result_axis, parted, form, destination)
        return split if split.verifies() else None

    def allocated(self) -> MemberSplit:
        """The split writing into the op's destination, allocated just before the op where
        it allocates its result (a whole run's matmul)."""
        if self.op.out is not None:
            return self
        buffer = _insert_before(self.op, hir.AllocateOp(tensor_type(self.op.result)), self.op, self.op.result.name_hint)
        return replace(self, destination=buffer.results[0])

    def emit(self, block: Block, position: SSAValue, sources: Sources | None = None) -> None:
        """The op on member `position`'s part, at the end of `block`. `sources`: operands
        whose part is read from another tensor instead, by operand: (that tensor, its axis)."""
        sources = sources or {}
        views = {v: self._view(block, *sources.get(v, (v, axis)), position) for v, axis in self.parted.items()}
        out = self._view(block, self.destination, self.axis, position)
        part = self.form.op(self.op, views, {**self.parted, self.op.result: self.axis}, tensor_type(out), out)
        block.add_op(located_like(part, self.op))

    def _view(self, block: Block, tensor: SSAValue, axis: int, position: SSAValue) -> SSAValue:
        view = located_like(self.form.view(tensor, position, axis), self.op)
        view.result.name_hint = f"{tensor.name_hint}_p" if tensor.name_hint else None
        block.add_op(view)
        return view.result

    def verifies(self, position: SSAValue | None = None, sources: Sources | None = None) -> bool:
        """Do one part and its views verify? (Tried on a scratch block, left behind.)"""
        scratch = Block(arg_types=[INDEX])
        self.emit(scratch, position if position is not None else scratch.args[0], sources)
        try:
            for op in scratch.ops:
                op.verify()
        except VerifyException:
            return False
        finally:
            for op in reversed(list(scratch.ops)):
                op.detach()
                op.erase(safe_erase=False)
        return True


def _parted_operands(op: fusion.ComputeOp, result_axis: int, form: ChunkForm) -> dict[SSAValue, int] | None:
    """The operands `op` reads part by part when its result is computed in parts along
    `result_axis`, with their axes (None: `op` on parts is not `op` on their operands' parts)."""
    assert isinstance(op, fusion.StreamSliceable)  # `MemberSplit.of` splits only stream-sliceable ops
    axes = {v: a for v in op.tensor_inputs() if (a := operand_axis(op, v, result_axis)) is not None}
    if isinstance(form, Narrowed):
        return narrowed_operand_axes(op, result_axis, axes)
    # Part p of each operand must be part p of the result: read in order, of the same
    # extent (a slice of the gathered axis is not computed part by part).
    extent = tensor_type(op.result).axes[result_axis].extent
    if any(op.operand_chunk_stride(v, a) != (0, 1)
           or not tensor_type(v).axes[a].is_broadcast and tensor_type(v).axes[a].extent != extent
           for v, a in axes.items()):
        return None
    return axes


Sources = dict[SSAValue, tuple[SSAValue, int]]


def _insert_before(anchor: Operation, op: Operation, like: Operation, name: str | None = None) -> Operation:
    located_like(op, like)
    if name is not None:
        op.results[0].name_hint = name
    Rewriter.insert_op(op, InsertPoint.before(anchor))
    return op


def team_position(collective: hir.CollectiveOp) -> SSAValue:
    """`%me = hir.team_position team [..]` of the collective's team, once per program,
    at its start."""
    program = collective.parent_op()
    while not isinstance(program, hir.ProgramOp):
        assert program is not None  # the pass visits only collectives inside host programs
        program = program.parent_op()
    block = program.body.block
    for op in block.ops:
        if isinstance(op, hir.TeamPositionOp) and op.team == collective.team:
            return op.result
    position = located_like(hir.TeamPositionOp(collective.teams), collective)
    position.result.name_hint = "me"
    assert block.first_op is not None  # the program's block holds the collective, or the op around it
    block.insert_op_before(position, block.first_op)
    return position.result


def member_loop(collective: hir.CollectiveOp, anchor: Operation, first: int,
                body: Callable[[Block, SSAValue], None]) -> None:
    """Before `anchor`: `scf.for %s = first to D { %p = (me + s) mod D; body }`."""
    me = team_position(collective)
    lower, upper, step = (
        _insert_before(anchor, index_constant(value), collective, name).results[0]
        for value, name in ((first, "s0"), (collective.team_size, "team"), (1, "c1"))
    )
    block = Block(arg_types=[INDEX])
    block.args[0].name_hint = "s"
    shifted = located_like(arith.AddiOp(me, block.args[0]), collective)
    position = located_like(arith.RemUIOp(shifted.result, upper), collective)
    position.result.name_hint = "p"
    block.add_ops([shifted, position])
    body(block, position.result)
    block.add_op(located_like(scf.YieldOp(), collective))
    Rewriter.insert_op(located_like(scf.ForOp(lower, upper, step, [], Region(block)), collective),
                       InsertPoint.before(anchor))


# --------------------------------------------------------------------------- #
# The two splits
# --------------------------------------------------------------------------- #


def _only_views_between(first: Operation, last: Operation, avoid: SSAValue) -> bool:
    """Only views, allocations and constants between `first` and `last`, none of them reading `avoid`."""
    op = first.next_op
    while op is not None and op is not last:
        if not isinstance(op, (hir.AliasViewOp, hir.AllocateOp, arith.ConstantOp)) or avoid in op.operands:
            return False
        op = op.next_op
    return op is last


def _sole_wait(collective: hir.CollectiveOp) -> hir.WaitOp | None:
    """The one whole `hir.wait` of the collective, in its block."""
    uses = [u.operation for u in collective.work.uses]
    if len(uses) != 1 or not isinstance(uses[0], hir.WaitOp) or uses[0].member is not None:
        return None
    return uses[0] if uses[0].parent_block() is collective.parent_block() else None


def split_allgather_consumer(collective: hir.AllgatherOp) -> bool:
    """Own part first, from the input in place where it can be, each other part once it
    has arrived, then the whole wait (see the module docstring)."""
    wait, gathered = _sole_wait(collective), collective.output
    parts = member_parts(tensor_type(gathered), collective.team_size)
    readers = [u.operation for u in gathered.uses
               if u.operation is not collective and not isinstance(u.operation, hir.DeallocateOp)]
    if wait is None or parts is None or len(readers) != 1:
        return False
    axis = parts[0]
    (consumer,) = readers
    if not isinstance(consumer, fusion.ComputeOp) or consumer.parent_block() is not wait.parent_block():
        return False
    split = MemberSplit.of(consumer, consumer.axis_map(gathered).get(axis))
    if split is None or gathered not in split.parted or not _only_views_between(wait, consumer, gathered):
        return False
    me = team_position(collective)
    in_place = {gathered: (collective.input, axis)}
    own_part_in_place = _holds_own_part(collective.input, axis) and split.verifies(me, in_place)
    allocated = split.allocated()

    def part(block: Block, position: SSAValue) -> None:
        block.add_op(located_like(hir.WaitOp(collective.work, position), wait))
        allocated.emit(block, position)

    if own_part_in_place:
        _insert_part(allocated, me, consumer, in_place)
        collective.properties["peers_only"] = UnitAttr()
    member_loop(collective, consumer, 1 if collective.peers_only else 0, part)
    wait.detach()
    Rewriter.insert_op(wait, InsertPoint.before(consumer))
    _retire(allocated)
    return True


def _holds_own_part(shard: SSAValue, axis: int) -> bool:
    """Is `axis` of the all-gather's input `shard` sharded across devices, each holding
    its own part (which the part's view selects, at this rank's position)?"""
    return any(p.parallel.is_device for p in tensor_type(shard).axes[axis].pieces)


def _insert_part(split: MemberSplit, position: SSAValue, anchor: Operation, sources: Sources | None = None) -> None:
    """Member `position`'s part of `split`, before `anchor`."""
    part = Block()
    split.emit(part, position, sources)
    for op in list(part.ops):
        op.detach()
        Rewriter.insert_op(op, InsertPoint.before(anchor))


def split_scatter_producer(collective: hir.OwnProductCollectiveOp, reduce_in_producer: bool = False) -> bool:
    """Other members' chunks, the post, then the own chunk (see the module docstring):
    the copy-engine post of a reduce-scatter or all-reduce reads only the other members'
    chunks of its input. With `reduce_in_producer`, the collective computes the own chunk
    of a matmul itself (`own_product`) where it can."""
    wait, partial = _sole_wait(collective), collective.input
    parts = member_parts(tensor_type(partial), collective.team_size, any_blocks=isinstance(collective, hir.AllreduceOp))
    producer = _writer_before(collective, partial)
    if wait is None or parts is None or producer is None:
        return False
    axis, forms = parts
    split = next(filter(None, (MemberSplit.of(producer, axis, form) for form in forms)), None)
    if split is None or not _only_views_between(producer, collective, partial):
        return False
    split = split.allocated()
    member_loop(collective, producer, 1, split.emit)
    me = team_position(collective)
    if not (reduce_in_producer and beside_later_chunks(collective) and own_product(collective, split, me)):
        _insert_part(split, me, wait)
    _retire(split)
    return True


def beside_later_chunks(collective: hir.OwnProductCollectiveOp) -> bool:
    """Is `collective` in a loop of more than one iteration (a stream pipeline's), whose
    later chunks compute while its own part's GEMM waits for the peers' parts? Where none
    would (a whole run, one chunk), that GEMM would wait with the SMs idle for the peers'
    GEMMs and pushes, then delay the push of the reduced part, where computed before the
    wait it hides the peers' pushes instead (2x H200, matmul+AR 16384x8192x1024 run whole:
    0.343 ms back to back with the own part in the all-reduce, 0.278 ms without;
    benchmarks/README.md)."""
    loops = enclosing_loops(collective)
    return bool(loops) and trip_count(loops[0]) != 1


def own_product(collective: hir.OwnProductCollectiveOp, split: MemberSplit, me: SSAValue) -> bool:
    """Give the collective the operands of its producer's own part, a matmul by one
    matrix without epilogue whose part is rows in order (`own (%a_me, %b)`), in place of
    computing that part: the all-reduce's second phase, or the reduce-scatter's wait,
    multiplies them onto the other members' parts (the GEMM adds them, beta = 1), so no
    add kernel runs and the own part's GEMM runs once the peers' parts are in, while the
    next chunks' other parts compute. A reduce-scatter needs its output symmetric for it
    (made so where it can be, `can_be_symmetric_output`), so that the lead's part lands
    where the GEMM adds onto it: with the part in `via`, torch would copy it into the
    output first, which costs most of what the add did."""
    matmul = split.op
    if not isinstance(matmul, fusion.MatmulOp) or matmul.epilogue is not None or matmul.a not in split.parted \
            or not _whole_in_every_part(split, matmul.b) or tensor_type(split.destination).value_allocation_order() is not None:
        return False
    scatters = isinstance(collective, hir.ReduceScatterOp)
    already_symmetric = hir.views_symmetric_buffer(collective.output)
    made_symmetric = scatters and not already_symmetric
    if made_symmetric and not can_be_symmetric_output(collective.output):
        return False
    symmetric = already_symmetric or made_symmetric
    views = [located_like(split.form.view(v, me, split.parted[v]), matmul) for v in (matmul.a, matmul.b) if v in split.parted]
    for view in views:
        view.result.name_hint = f"{view.input.name_hint}_me" if view.input.name_hint else None
    parts = iter(views)
    own = [next(parts).result if v in split.parted else v for v in (matmul.a, matmul.b)]
    assert collective.reduction is not None and collective.via is not None  # a verified copy-engine reduction
    via = collective.via if _via_needed_onto_product(collective, symmetric) else None
    fused = located_like(type(collective)(collective.input, collective.output, collective.teams,
                                          reduction=collective.reduction.data, transport=collective.transport.data,
                                          via=via, own=own), collective)
    Rewriter.insert_op(views, InsertPoint.before(collective))
    try:
        fused.verify_own()
    except VerifyException:
        fused.erase(safe_erase=False)
        for view in reversed(views):
            Rewriter.erase_op(view)
        return False
    if made_symmetric:
        make_symmetric(collective.output)
    fused.work.name_hint = collective.work.name_hint
    unused_via = collective.via if via is None else None
    Rewriter.replace_op(collective, fused)
    if unused_via is not None:
        _erase_unused_view(unused_via)
    return True


def _via_needed_onto_product(collective: hir.OwnProductCollectiveOp, into_symmetric: bool) -> bool:
    """Does `collective` still need its `via` buffer once its own part is a product
    computed onto the received chunks, into a symmetric output or not? Not on a team of
    two with a symmetric output, where the one peer pushes its chunk into the output (a
    symmetric buffer no one else needs, and one handshake fewer with the peer per run)."""
    algorithm = copy_engine_algorithm(collective.name)
    assert algorithm is not None  # a copy-engine all-reduce or reduce-scatter
    return algorithm.via_inputs_needed(collective.team_size, into_symmetric, onto_product=True) > 0


def _erase_unused_view(view: SSAValue) -> None:
    """Erase `view`, a chain of views of a `hir.allocate`, and the allocation, as far up
    the chain as nothing else uses them."""
    while not view.uses and isinstance(view.owner, (*hir.VIEW_OPS, hir.AllocateOp)):
        owner = view.owner
        Rewriter.erase_op(owner)
        if isinstance(owner, hir.AllocateOp):
            return
        view = owner.input


def _whole_in_every_part(split: MemberSplit, operand: SSAValue) -> bool:
    """Does every part of `split` read all of `operand` (not parted, or along a broadcast axis)?"""
    return operand not in split.parted or tensor_type(operand).axes[split.parted[operand]].is_broadcast


def _writer_before(collective: hir.CollectiveOp, buffer: SSAValue) -> fusion.ComputeOp | None:
    """The compute op just before `collective` (views, allocations and constants aside) writing
    `buffer` (its destination, or the result it allocates)."""
    op = collective.prev_op
    while isinstance(op, (hir.AliasViewOp, hir.AllocateOp, arith.ConstantOp)):
        op = op.prev_op
    if isinstance(op, fusion.ComputeOp) and (op.out if op.out is not None else op.result) is buffer:
        return op
    return None


def _retire(split: MemberSplit) -> None:
    """The op's parts were computed into its destination: its readers read the destination."""
    split.op.result.replace_all_uses_with(split.destination)
    Rewriter.erase_op(split.op)


@dataclass(frozen=True)
class SplitByMember(ModulePass):
    """Split the compute around copy-engine collectives by team member (own part first)."""

    name = "split-by-member"

    reduce_in_producer: bool = True
    """A copy-engine all-reduce of a matmul's product computes this member's part itself
    (`own_product`), onto the others' parts. On by default (measured in docs/copy_engine.md)."""

    reduce_scatter_in_producer: bool = False
    """The same for a copy-engine reduce-scatter, whose output becomes symmetric for it. Off
    by default: on 2x H200 it made the attention projections and matmul+RS on the two larger
    shapes faster, and the small MLP block and matmul+RS on the small shape slower
    (docs/copy_engine.md, "Next", item 5)."""

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        for program in programs(op):
            for collective in [c for c in program.walk() if isinstance(c, hir.CollectiveOp) and c.uses_copy_engine]:
                if isinstance(collective, hir.AllgatherOp):
                    split_allgather_consumer(collective)
                else:
                    assert isinstance(collective, hir.OwnProductCollectiveOp)  # verified: no other kind uses copy engines
                    scatters = isinstance(collective, hir.ReduceScatterOp)
                    split_scatter_producer(collective, self.reduce_scatter_in_producer if scatters else self.reduce_in_producer)
