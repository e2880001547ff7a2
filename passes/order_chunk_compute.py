"""`order-chunk-compute`: in a stream loop whose iterations only send, through a
collective with a later step that follows the chunk's compute (a copy-engine all-reduce,
or a reduce-scatter that computes its own part), each iteration's compute starts after the
previous iteration's, and the iterations' waits are joined after the loop.

stream-parallel-type runs iteration i on worker stream i mod numberOfStreams, and each
worker waits for the user's stream only, so the first kernels of every iteration are ready
at once and the GPU runs them in an order of its choosing. Where an iteration computes
what it then sends (matmul+RS, matmul+AR), that order decides when the first collective
can start. Replayed from a CUDA graph while the previous replay still ran, as a training
loop issues its layers, all sixteen GEMMs of matmul+AR 16384x8192x4096 at S = 8 ran
before the first all-reduce's second phase, and the chunks' all-reduces then ran one
after another behind them (2x H100: 1.21 ms a run back to back, against 1.07 settled,
where the graph's nodes happened to start in chunk order). In chunk order, the first
chunk's collective starts as soon as its compute is done, and only the last chunk's is
left after the GEMMs (the same loops back to back: 0.93-0.97 ms).

An iteration only sends when nothing that computes or communicates follows its first
`hir.wait` (after it come its waits, and what views or frees buffers). The pass orders
such a loop where one of its collectives has a later step on the copy engines, which
cannot start before the whole chunk is computed and pushed (the all-reduce's second phase:
reduce the own part, push it, copy the peers'; a reduce-scatter's own part computed onto
the parts pushed to it, `hir.reduce_scatter ... own(...)`): there the order of the chunks
decides how much of the communication is left after the last GEMM. Where every collective
is one phase (a reduce-scatter, whose split-by-member pushes each part as soon as it is
computed, and computes its own part beside them), chunks
computed two at a time used the GPU better than in chain, which also adds two stream
hand-overs per chunk: ordered, matmul+RS ran 5-25% slower back to back and 5-80% slower
settled (2x H100, two launches whose GEMMs alone differed by 3%; 32768x4096x2048 at S = 8:
0.873 ordered against 0.476 ms), so it is left as it is. Such a loop's body

    hir.set_current_stream %w                  hir.set_current_stream %w
                                               hir.synchronize %user      (the previous iteration's compute)
    (compute, posts)                    ->     (compute, posts)
                                               hir.set_current_stream %user
                                               hir.synchronize %w         (this iteration's compute)
                                               hir.set_current_stream %w
    hir.wait ...                               hir.wait ...
    hir.set_current_stream %user               hir.set_current_stream %user
    hir.synchronize %w

and right after the loop, before anything that follows it (the deallocations of the
buffers its collectives read among them), the user's stream waits for every worker:

    scf.for %i = %c0 to %ub step %c1 { (%w of iteration %i) ; hir.synchronize %w }

A loop that receives (an all-gather's consumer computes from what arrives) keeps its
order: there a chunk's compute waits for its transfers, and chaining the computes would
make each also wait for the previous chunk's transfers (AG+matmul 16384x8192x1024, S = 4,
2x H100: 0.615 ms chained against 0.465). The ordering adds waits and moves none of the
program's work, so what it computes is unchanged; it runs after insert-deallocations,
which places the frees after the loop that the join must precede.

Option `skew` (on by default): where the loop's all-reduces compute this member's part
themselves (`hir.allreduce ... own(...)`, split-by-member's reduce-in-producer), the own
part's GEMM is enqueued by the wait, on a product stream of its own, after the waiting
stream's work so far and the arrival of the other members' parts (a reduce-scatter's,
`hir.reduce_scatter ... own(...)`, on the waiting stream itself). Waited in its own
iteration, chunk i's own GEMM runs beside chunk i + 1's peer GEMMs, both end together, and
the last chunk's own GEMM waits for the last push with the SMs idle. The hand-written
schedule of issue 27 computes p(0), p(1), m(0), p(2), m(1), ...: each chunk's own GEMM
after the next chunk's peer GEMMs, which gives each push a GEMM's time to land. So the
loop is software-pipelined, as MLIR's scf pipelining does it: the first iteration's compute
and posts are peeled before the loop, iteration i waits for iteration i - 1's collective
(its work token carried by the loop) after its own compute and posts, and the last
iteration's is waited after the loop, on the user's stream, before the workers are
joined:

    (iteration 0 up to its hand-over)
    %last = scf.for %i = %second to %ub step %c1 iter_args(%previous = %w) -> (!hir.work) {
      (iteration %i up to its hand-over: compute, posts, the user's stream waits for them)
      hir.set_current_stream %worker
      hir.wait %previous
      hir.set_current_stream %user
      scf.yield %w : !hir.work
    }
    hir.wait %last

Only loops of constant bounds and at least three iterations (SKEWED_ITERATIONS) whose body
ends in such waits alone are skewed (with bounded intermediates a wait is followed by the
chunk's free, and the loop keeps its order).
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects import scf
from xdsl.dialects.builtin import ModuleOp
from xdsl.ir import Block, Operation, Region, SSAValue
from xdsl.passes import ModulePass
from xdsl.rewriter import InsertPoint, Rewriter

from hostir_dialect import fusion, hir
from hostir_dialect.attributes import INDEX
from hostir_dialect.building import constant_integer, index_constant
from hostir_dialect.copy_engine_facts import copy_engine_algorithm
from hostir_dialect.diagnostics import located_like
from hostir_dialect.symbols import programs

from .stream_loops import worker_stream_ops

COMPUTE = (fusion.ComputeOp, hir.PostOnStreamOp)
COMMUNICATION = (hir.CollectiveOp, hir.PointToPointOp)
WORK = (*COMPUTE, *COMMUNICATION)
"""Ops that enqueue computation or communication."""


@dataclass(frozen=True)
class SendingIteration:
    """The parts of a stream loop's body that only sends."""

    enter: hir.SetCurrentStreamOp
    """`hir.set_current_stream %w`: the iteration starts on its worker."""
    first_wait: Operation
    """The op of the body where the waiting begins: what precedes it computes and posts."""
    join: hir.SynchronizeOp
    """`hir.synchronize %w` at the end: the user's stream waits for the whole iteration."""

    @property
    def worker(self) -> SSAValue:
        return self.join.stream

    @property
    def user(self) -> SSAValue:
        leave = self.join.prev_op
        assert isinstance(leave, hir.SetCurrentStreamOp)  # sending_iteration checked it
        return leave.stream


def sending_iteration(loop: scf.ForOp) -> SendingIteration | None:
    """The parts of `loop`'s body, if it is a stream loop's main body (as stream-parallel-type
    builds it) that computes and posts a collective with a later step before it waits,
    and does nothing else after (a loop that only posts and waits has no compute to
    order)."""
    ops = list(loop.body.block.ops)
    if len(ops) < 3 or not isinstance(join := ops[-2], hir.SynchronizeOp):
        return None
    if not isinstance(ops[-3], hir.SetCurrentStreamOp) or not isinstance(join.stream.owner, hir.StreamOp):
        return None
    enter = next((op for op in ops if isinstance(op, hir.SetCurrentStreamOp)), None)
    if enter is None or enter.stream != join.stream:
        return None
    body = ops[ops.index(enter) + 1:-3]
    first = next((i for i, op in enumerate(body) if _contains(op, hir.WaitOp)), None)
    if first is None or any(_contains(op, WORK) for op in body[first:]):
        return None
    before = body[:first]
    if not any(_contains(op, COMPUTE) for op in before) or not any(_has_a_later_step(op) for op in before):
        return None
    return SendingIteration(enter, body[first], join)


def _contains(op: Operation, kinds: type | tuple[type, ...]) -> bool:
    return any(isinstance(inner, kinds) for inner in op.walk())


def _has_a_later_step(op: Operation) -> bool:
    """Does `op` post a copy-engine collective with a step that cannot start before the
    whole chunk is computed and pushed: a second phase (the all-reduce's), or the own
    part's GEMM onto the received parts (a reduce-scatter's `own`)?"""
    for inner in op.walk():
        if isinstance(inner, hir.CollectiveOp) and inner.uses_copy_engine:
            algorithm = copy_engine_algorithm(inner.name)
            if algorithm is not None and algorithm.phases > 1 or inner.onto_product:
                return True
    return False


def order(loop: scf.ForOp, iteration: SendingIteration) -> None:
    """Chain the iterations' compute through the user's stream and join their waits after the loop."""
    worker, user = iteration.worker, iteration.user

    def located(op: Operation) -> Operation:
        return located_like(op, loop)

    Rewriter.insert_op(located(hir.SynchronizeOp(user)), InsertPoint.after(iteration.enter))
    handover = [hir.SetCurrentStreamOp(user), hir.SynchronizeOp(worker), hir.SetCurrentStreamOp(worker)]
    Rewriter.insert_op([located(op) for op in handover], InsertPoint.before(iteration.first_wait))
    Rewriter.erase_op(iteration.join)
    Rewriter.insert_op(join_loop(loop), InsertPoint.after(loop))


def join_loop(loop: scf.ForOp) -> scf.ForOp:
    """A loop over `loop`'s iterations in which the current stream waits for each one's worker."""
    block = Block(arg_types=[INDEX])
    block.args[0].name_hint = "i"
    ops = worker_stream_ops(block.args[0])
    block.add_ops(located_like(op, loop) for op in (*ops, hir.SynchronizeOp(ops[-1].results[0]), scf.YieldOp.create()))
    # Built by `Operation.create`, as stream-parallel-type builds its loops.
    return located_like(scf.ForOp.create(operands=[loop.lb, loop.ub, loop.step], regions=[Region(block)]), loop)


SKEWED_ITERATIONS = 3
"""The fewest iterations of a loop that is skewed. With two, the skew only runs the second
chunk's peer GEMMs and the first chunk's own GEMM one after the other instead of side by
side, and no later push gains a GEMM's time to land: measured on 2x H200 (three launches,
benchmarks/README.md, fourteenth session) two skewed chunks were never faster, and 7% slower
back to back where a block's GEMM fills less than one wave of the SMs (matmul+AR
16384x8192x1024); from four chunks on the skew was 4-8% faster (32768x4096x2048)."""


def skewed_waits(loop: scf.ForOp, iteration: SendingIteration) -> list[hir.WaitOp]:
    """The waits an ordered loop can move into its next iteration (none: leave it as it
    is): its body ends in waits only, each for an all-reduce or reduce-scatter of this
    iteration that computes its own part (`own`), and the loop runs at least
    SKEWED_ITERATIONS times (its first iteration is peeled)."""
    ops = list(loop.body.block.ops)
    ending = ops[ops.index(iteration.first_wait):-2]  # then the user's stream and the yield
    waits = [op for op in ending if isinstance(op, hir.WaitOp) and _computes_own_part_here(op, loop)]
    if loop.iter_args or len(waits) != len(ending):
        return []
    lower, upper, step = (constant_integer(v) for v in (loop.lb, loop.ub, loop.step))
    if lower is None or upper is None or step is None or step <= 0 or upper - lower <= (SKEWED_ITERATIONS - 1) * step:
        return []
    return waits


def _computes_own_part_here(wait: hir.WaitOp, loop: scf.ForOp) -> bool:
    post = wait.work.owner
    return (wait.member is None and isinstance(post, hir.CollectiveOp) and post.onto_product
            and post.parent_block() is loop.body.block)


def skew(loop: scf.ForOp, waits: list[hir.WaitOp]) -> None:
    """Software-pipeline `loop`: iteration i waits for iteration i - 1's collectives after
    its own compute and posts, so that the previous chunk's own part (computed when the
    wait is enqueued, after what the current stream did so far) follows this chunk's
    compute; the first iteration's compute and posts run before the loop, the last
    iteration's waits after it, on the user's stream."""
    block = loop.body.block
    handover = waits[0].prev_op
    posted = handover.prev_op if handover is not None else None  # the user's stream waits for the iteration's compute
    assert isinstance(posted, hir.SynchronizeOp)  # built by `order`
    first: dict[SSAValue, SSAValue] = {block.args[0]: loop.lb}
    prologue = [op.clone(value_mapper=first) for op in _until(block, posted)]
    lower, step = constant_integer(loop.lb), constant_integer(loop.step)
    assert lower is not None and step is not None  # skewed_waits checked both
    second = index_constant(lower + step)
    second.result.name_hint = "second"
    works = [wait.work for wait in waits]
    for position, wait in enumerate(waits):
        wait.operands[0] = block.insert_arg(hir.WorkType(), position + 1)
        wait.work.name_hint = "previous"
    Rewriter.replace_op(block.last_op, scf.YieldOp(*works))  # type: ignore[arg-type]  # a loop body ends in its yield
    skewed = scf.ForOp.create(operands=[second.result, loop.ub, loop.step, *(first[w] for w in works)],
                              result_types=[w.type for w in works], regions=[loop.detach_region(loop.body)])
    last = [hir.WaitOp(carried) for carried in skewed.res]
    for carried in skewed.res:
        carried.name_hint = "last"
    Rewriter.insert_op([located_like(op, loop) for op in (*prologue, second, skewed, *last)], InsertPoint.before(loop))
    Rewriter.erase_op(loop)


def _until(block: Block, last: Operation) -> list[Operation]:
    ops = list(block.ops)
    return ops[:ops.index(last) + 1]


@dataclass(frozen=True)
class OrderChunkCompute(ModulePass):
    """Run in chunk order the compute of stream loops that only send, through a copy-engine all-reduce or a reduce-scatter computing its own part"""

    name = "order-chunk-compute"

    skew: bool = True
    """In loops of at least SKEWED_ITERATIONS chunks, wait for each chunk's all-reduce or
    reduce-scatter that computes its own part in the next iteration, after that iteration's
    compute (see the module docstring); false: in its own iteration."""

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        for program in programs(op):
            for loop in [inner for inner in program.walk() if isinstance(inner, scf.ForOp)]:
                iteration = sending_iteration(loop)
                if iteration is None:
                    continue
                order(loop, iteration)
                waits = skewed_waits(loop, iteration) if self.skew else []
                if waits:
                    skew(loop, waits)
