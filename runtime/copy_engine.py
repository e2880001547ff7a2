"""The copy-engine transport of `hir.allgather`, `hir.reduce_scatter` and `hir.allreduce`
(docs/copy_engine.md): pushes into the other members' symmetric buffers, one flag per
member and phase of a post, reductions done locally (hostir_dialect/copy_engine_facts.py
says what each algorithm sends).

A post runs on a communication stream that first waits for the current stream (one such
stream per device and phase, `Ordering`), as an NCCL collective runs on NCCL's stream. On
CPU ranks streams are bookkeeping and the same code runs in program order.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from contextlib import contextmanager
from typing import cast

import torch
from xdsl.ir import Operation, SSAValue

from hostir.passes.buffer_aliases import buffer_roots
from hostir.passes.stream_loops import enclosing_loops
from hostir_dialect import hir
from hostir_dialect.building import constant_integer
from hostir_dialect.copy_engine_facts import ALGORITHMS, CopyEngineAlgorithm, copy_engine_algorithm
from hostir_dialect.diagnostics import op_error
from hostir_dialect.fusion import ReduceKind
from hostir_dialect.tensor_type import DYNAMIC, tensor_type

from .hazards import Hazards
from .layouts import logical_shape, torch_dtype
from .result_sets import RESULT_SETS, HostAgreement
from .streams import role_stream
from .symmetric_memory import Flags, SymmetricHeap, SymmetricTensor, peer_view

MAX_COPY_ENGINE_STREAMS = 8
"""Communication streams per phase (`Ordering`'s lanes) an evaluator may ask for."""

_COMBINE: dict[ReduceKind, Callable[..., torch.Tensor]] = {
    ReduceKind.SUM: torch.add, ReduceKind.PROD: torch.mul,
    ReduceKind.MAX: torch.maximum, ReduceKind.MIN: torch.minimum,
}


PRODUCT_PHASE = -1
"""`Ordering._new_side`'s phase for the streams of all-reduces' own matmul parts."""

SIDE_PRIORITY = -1
"""The CUDA stream priority of the copy engines' streams (torch's: lower is higher; the
workers' is 0)."""

LAST_POST_PIECES = 2
"""Blocks of rows in which the last post of a run of a copy-engine all-reduce that computes
its own part (`own`) computes that part and pushes the sum: the push of that post's sum is
the one transfer nothing is computed beside (the last chunk's exchange), and in pieces all
but the last piece's push run beside the next piece's GEMM."""


class Ordering:
    """Runs communication on side streams (as NCCL runs its collectives on its own
    stream), after the posting stream's prior work, and makes the posting stream wait for
    it later (no streams on CPU, where work runs in program order; there the order is
    still followed by the stream hazard check, `hazards`, when it is on).

    A stream per phase of the algorithms: a later phase waits for compute (the
    all-reduce's second phase, for the chunk's own part), which on the first phase's
    stream would hold back the next posts' first phases, which wait only for their own
    producers. `lanes` streams per phase, taken in turn by a collective's posts (post k
    on lane k mod lanes), so that transfers of different posts may overlap; by default
    one, not one per posting stream: the copy engines were seen to run transfers one
    after the other whatever stream they came from, and a flag written after a transfer
    (a stream memory operation) was measured on H200, in CUDA graphs, to land only after
    every transfer enqueued before it on any stream; on one stream each flag follows its
    own transfer. One more stream acquires the symmetric buffers (`acquire`): it waits for
    the peers' releases of their previous run, and the pushes wait for it, not the compute.

    `current()` is the stream device work is enqueued on now (the evaluator's stream pool
    knows it without asking torch, which is slower; default: ask torch). Marks are CUDA
    events kept per key and re-recorded each run, so a run creates none. A key names one
    point of one run (a team's flag slot and a role), so a re-recorded event is only ever
    re-recorded on the same stream, by the next run, after its waiter."""

    def __init__(self, device: torch.device, current: Callable[[], object] | None = None,
                 hazards: Hazards | None = None, lanes: int = 1):
        self.cuda = device.type == "cuda"
        self.device = device
        self.hazards = hazards
        self.lanes = lanes
        if not self.cuda:
            current = _no_stream
        self.current = current or (lambda: torch.cuda.current_stream(device))
        phases = max(algorithm.phases for algorithm in ALGORITHMS.values())
        self._sides: dict[tuple[int, int], object] = {
            (phase, lane): self._new_side(phase, lane) for phase in range(1, phases + 1) for lane in range(lanes)}
        self._producing = {lane: self._new_side(PRODUCT_PHASE, lane) for lane in range(lanes)}
        """An all-reduce's own matmul part (`own`) runs on a stream of its own, beside phase
        2's: behind that stream's pushes of earlier posts' sums, the GEMM would wait for them."""
        self._acquiring = self._new_side(0, 0)
        self._acquiring_results = self._new_side(0, 1)
        """Result sets are acquired on a stream of their own: the peers release them when their
        run starts, later than other buffers (at the end of their previous run), and on one
        stream the first would hold back the others' acquisitions, and with them every push."""
        self._acquired: dict[SymmetricTensor, object] = {}
        """Each symmetric buffer's acquisition in this run: the mark its pushes wait for."""
        self._events: dict[tuple, torch.cuda.Event] = {}

    def _new_side(self, phase: int, lane: int) -> object:
        if self.cuda:
            # Above the workers' priority: a phase's reduce kernel is dispatched between
            # the blocks of the GEMM beside it, not after them (matmul+AR 16384x8192x4096,
            # S = 4, replayed, 2x H200: 0.92 ms against 1.01 at the workers' priority).
            return role_stream(self.device, ("copy-engine", phase, lane), priority=SIDE_PRIORITY)
        if self.hazards is not None:
            if phase == 0:
                return self.hazards.new_stream("the copy engines' acquiring stream" + (" of results" if lane else ""))
            if phase == PRODUCT_PHASE:
                return self.hazards.new_stream("the copy engines' product stream" +
                                               (f", lane {lane}" if self.lanes > 1 else ""))
            return self.hazards.new_stream(f"the copy engines' stream of phase {phase}" +
                                           (f", lane {lane}" if self.lanes > 1 else ""))
        return None

    def fork(self, phase: int = 1, lane: int = 0):
        """The communication stream of `phase` and `lane`, made to wait for the current
        stream's work so far (None on CPU, unless the hazard check follows it)."""
        return self._forked(self._sides[phase, lane])

    def fork_product(self, lane: int = 0):
        """The stream of all-reduces' own matmul parts of `lane` (see `_producing`), made to
        wait for the current stream's work so far (None on CPU, unless the hazard check follows it)."""
        return self._forked(self._producing[lane])

    def _forked(self, side):
        if self.cuda:
            side.wait_stream(self.current())
        elif self.hazards is not None:
            self.hazards.join(side, self.hazards.mark(self.hazards.current_stream()))
        return side

    def acquire(self, buffer: SymmetricTensor, key: tuple, wait_for_peers: Callable[[object], None],
                result: bool = False) -> None:
        """Acquire `buffer` for this run: `wait_for_peers(stream)` makes the acquiring
        stream, after the current stream's work so far, wait until every peer is done with
        its instance (its previous run); only the pushes into the peers' instances wait
        for that (`acquisition`), so this run's compute starts without waiting for the
        peers to finish their previous run. `key` names the point within a run; `result`:
        `buffer` is a result set's (acquired on a stream of its own)."""
        side = self._forked(self._acquiring_results if result else self._acquiring)
        wait_for_peers(side)
        if self.hazards is not None:
            self.hazards.acquire(side, buffer.local)  # the acquiring stream is the check's own
        self._acquired[buffer] = self.mark(key, side)

    def acquisition(self, buffer: SymmetricTensor):
        """The mark of `buffer`'s acquisition in this run (see `acquire`)."""
        return self._acquired.get(buffer)

    @contextmanager
    def enqueue_on(self, stream):
        """Device work enqueued inside goes on `stream` (CPU, or None: stays where it is)."""
        if stream is None or not self.cuda:
            yield
            return
        posting = self.current()
        torch.cuda.set_stream(stream)
        try:
            yield
        finally:
            torch.cuda.set_stream(posting)

    def mark(self, key: tuple, stream=None):
        """A point in the work of `stream` (default: the current stream) that another
        stream can wait for; `key` names the point within a run."""
        if not self.cuda:
            if self.hazards is None:
                return None
            return self.hazards.mark(stream if stream is not None else self.hazards.current_stream())
        event = self._events.get(key)
        if event is None:
            event = self._events[key] = torch.cuda.Event()
        # On CUDA, `current` gives torch's streams (the pool's or torch's current one).
        event.record(cast(torch.cuda.Stream, stream or self.current()))
        return event

    def join(self, mark, stream=None) -> None:
        """`stream` (default: the current one) waits for `mark`."""
        if mark is None:
            return
        if self.cuda:
            cast(torch.cuda.Stream, stream or self.current()).wait_event(mark)
        else:
            self.hazards.join(stream if stream is not None else self.hazards.current_stream(), mark)  # type: ignore[union-attr]  # marks exist only with it

    def touch(self, op: Operation | None, reads=(), writes=(), stream=None) -> None:
        """For the hazard check: `op`'s work on `stream` (default: the current one) reads
        and writes these tensors."""
        if self.hazards is not None:
            self.hazards.access(stream if stream is not None else self.hazards.current_stream(), op, reads, writes)

    def pushed(self, op: Operation | None, into: torch.Tensor, stream) -> None:
        """For the hazard check: `stream`'s work writes into the peers' instances of the
        symmetric buffer whose instance on this rank is `into`."""
        if self.hazards is not None:
            self.hazards.push(stream, op, into)

    def arrived(self, op: Operation | None, region: torch.Tensor, peer: int, stream=None) -> None:
        """For the hazard check: `stream` (default: the current one) waited for the peer at
        `peer` (its position), whose push wrote `region` of this rank's symmetric instance."""
        if self.hazards is not None:
            self.hazards.remote_write(stream if stream is not None else self.hazards.current_stream(), op, region, peer)


def push_order(position: int, size: int) -> tuple[int, ...]:
    """The other members of a team of `size`, in the order the member at `position` pushes
    to them: at step s every member pushes to the member s places before it, so no two
    pushes land on one GPU at once (pushed in team order, every member's first push went to
    member 0: on 4× H200 an all-gather's raw pushes took 1.7 times as long)."""
    return tuple((position - step) % size for step in range(1, size))


def _no_stream() -> None:
    return None


class CopyEngineWork:
    """The `!hir.work` of a copy-engine post: `wait()` runs the rest of the collective
    (`complete`) once; a later wait does nothing. A position (`hir.wait %w from %p`) is
    waited for as the whole, except by an all-gather (`AllgatherWork`)."""

    __slots__ = ("_complete",)

    def __init__(self, complete: Callable[[], None]):
        self._complete: Callable[[], None] | None = complete

    def wait(self, position: int | None = None) -> None:
        complete, self._complete = self._complete, None
        if complete is not None:
            complete()


class AllgatherWork:
    """The `!hir.work` of a copy-engine all-gather: `wait(p)` waits for the part of the
    member at position p only; `wait()` for every part and for this rank's own pushes
    (which read its input). `slots[p]`: where member p's part lands (for the hazard check)."""

    __slots__ = ("_gather", "_slot", "_own", "_sent", "_pending", "_slots")

    def __init__(self, gather: CopyEngineAllgather, slot: int, own, sent, slots: list[torch.Tensor]):
        self._gather = gather
        self._slot = slot
        self._own = own
        """The mark after which this rank's own slot holds its input (None: the post does not fill it)."""
        self._sent = sent
        self._pending = set(gather.peers)
        self._slots = slots

    def wait(self, position: int | None = None) -> None:
        gather = self._gather
        if position == gather.position:
            if self._own is None:
                raise RuntimeError("waits for this rank's own slot, which a `peers_only` all-gather does not fill")
            gather.ordering.join(self._own)
            return
        if position is None:
            arriving = [p for p in gather.sources if p in self._pending]
        else:
            arriving = [position] if position in self._pending else []
        for peer in arriving:
            gather.receive(peer, self._slot, self._slots[peer])
            self._pending.discard(peer)
        if position is None and self._sent is not None:
            gather.ordering.join(self._sent)
            self._sent = None


class CopyEngineCollective:
    """One copy-engine collective op of a program, compiled for this rank.

    `posts * ALGORITHM.phases` flags of `flags`, from `first_slot` on, are this op's: one
    per phase of each post in a run (a post inside loops posts once per iteration).
    `begin_run` rewinds to the first.
    """

    ALGORITHM: CopyEngineAlgorithm
    post: Callable[..., CopyEngineWork | AllgatherWork]
    """Each algorithm's own: posts one run of the op on its flat buffers (input, output,
    and the via buffer where the algorithm has one)."""

    def __init__(self, flags: Flags, first_slot: int, posts: int, ordering: Ordering,
                 op: hir.CollectiveOp | None = None):
        self.op = op
        """The op posted (what the hazard check names)."""
        self.flags = flags
        self.first_slot = first_slot
        self.posts = posts
        self.ordering = ordering
        self.position = flags.memory.position
        self.peers = push_order(self.position, flags.size)
        """The other members in the order this rank pushes to them (`push_order`); member p
        receives from p + 1, p + 2, ... in turn, the order of the consumers' loops over the
        parts (`split-by-member`)."""
        self.sources = self.peers[::-1]
        """The other members in the order their pushes reach this rank (p + 1, p + 2, ...:
        the push order reversed), the order it waits for them in."""
        self._next = 0

    def begin_run(self) -> None:
        self._next = 0

    def next_slot(self) -> int:
        """The first of this post's flag slots, one per phase."""
        slot = self.first_slot + (self._next % self.posts) * self.ALGORITHM.phases
        self._next += 1
        return slot

    def lane(self, slot: int) -> int:
        """The lane of the post that `slot` is a flag of (the same in every run)."""
        return (slot - self.first_slot) // self.ALGORITHM.phases % self.ordering.lanes

    def push_and_signal(self, into: SymmetricTensor | tuple[SymmetricTensor, ...], pushes: Callable[[int], torch.Tensor],
                        slot: int, phase: int = 1, before: Callable[[object], None] | None = None, after=None):
        """On the communication stream of `phase`, after the current stream's work so far
        and the mark `after`: `before` (given the stream), then `pushes(peer)` into every
        other member's instance of `into` (one buffer or several; it returns the tensor it
        read), then its flag `slot`. Returns the mark of the end of this work."""
        return self.push_pieces_and_signal(into, [(after, pushes)], slot, phase, before)

    def push_pieces_and_signal(self, into: SymmetricTensor | tuple[SymmetricTensor, ...],
                               pieces: Sequence[tuple[object, Callable[[int], torch.Tensor]]], slot: int, phase: int = 1,
                               before: Callable[[object], None] | None = None):
        """`push_and_signal` of a push made in pieces, each `(after, pushes)` pushed once
        its mark `after` is reached, in turn; the flag follows the last piece."""
        ordering = self.ordering
        side = ordering.fork(phase, self.lane(slot))
        ordering.join(pieces[0][0], side)
        with ordering.enqueue_on(side):
            if before is not None:
                before(side)
            for buffer in into if isinstance(into, tuple) else (into,):
                ordering.join(ordering.acquisition(buffer), side)
                ordering.pushed(self.op, buffer.local, side)
            for i, (after, pushes) in enumerate(pieces):
                if i:
                    ordering.join(after, side)
                for peer in self.peers:
                    ordering.touch(self.op, reads=[pushes(peer)], stream=side)
                    if i == len(pieces) - 1:
                        self.flags.signal(peer, slot, side)
        return ordering.mark((self.flags.team, slot, "pushed"), side)

    def receive(self, peer: int, slot: int, region: torch.Tensor, stream=None) -> None:
        """`stream` (default: the current one) waits for flag `slot` of the member at
        position `peer`, whose push wrote `region` of this rank's symmetric instance."""
        self.flags.wait(peer, slot, stream if stream is not None else self.ordering.current())
        self.ordering.arrived(self.op, region, peer, stream)


class CopyEngineAllgather(CopyEngineCollective):
    """out (a view of `symmetric_out`) = concat over the team of every member's input;
    with `fills_own_slot` False (`peers_only`), this rank's own slot is left as it is."""

    ALGORITHM = ALGORITHMS["hir.allgather"]

    def __init__(self, flags: Flags, first_slot: int, posts: int, ordering: Ordering, symmetric_out: SymmetricTensor,
                 op: hir.CollectiveOp | None = None, fills_own_slot: bool = True):
        super().__init__(flags, first_slot, posts, ordering, op)
        self.symmetric_out = symmetric_out
        self.fills_own_slot = fills_own_slot

    def post(self, inp: torch.Tensor, out: torch.Tensor) -> AllgatherWork:
        """`inp`, `out`: the flat buffers (views of dense memory)."""
        slot = self.next_slot()
        slots = _chunks(out, self.flags.size)
        mine = slots[self.position]
        sent = self.push_and_signal(self.symmetric_out, lambda peer: _copy(peer_view(self.symmetric_out, mine, peer), inp),
                                    slot)
        own = None
        if self.fills_own_slot:
            # On the posting stream, after the pushes were forked from it, so it does not
            # queue behind other posts' transfers on the communication stream.
            mine.copy_(inp)
            self.ordering.touch(self.op, reads=[inp], writes=[mine])
            own = self.ordering.mark((self.flags.team, slot, "local"))
        return AllgatherWork(self, slot, own, sent, slots)


class CopyEngineReduceScatter(CopyEngineCollective):
    """out = the reduction over the team of every member's input chunk `me`; the other
    members' chunks arrive in `via` (a view of `symmetric_via`, the input's shape).

    With `own` (a matmul's operands, `hir.reduce_scatter ... own(...)`), the wait computes
    this rank's part onto the other members' chunks instead of reducing input chunk `me`
    (unread); with a symmetric output too (`output()`, this run's instance), the member's
    lead (the member after it, whose push reaches it first) pushes its chunk straight into
    the output, where the GEMM adds onto it in place: on a team of two nothing lands in
    `via`, and there is none (None)."""

    ALGORITHM = ALGORITHMS["hir.reduce_scatter"]

    def __init__(self, flags: Flags, first_slot: int, posts: int, ordering: Ordering,
                 symmetric_via: SymmetricTensor | None, kind: ReduceKind, op: hir.CollectiveOp | None = None,
                 output: Callable[[], SymmetricTensor] | None = None):
        super().__init__(flags, first_slot, posts, ordering, op)
        self.symmetric_via = symmetric_via
        self.combine = _COMBINE[kind]
        self.output = output

    def post(self, inp: torch.Tensor, out: torch.Tensor, via: torch.Tensor | None = None,
             own: tuple[torch.Tensor, torch.Tensor] | None = None) -> CopyEngineWork:
        """`inp`, `out`, `via`: the flat buffers (views of dense memory); `own`: the operands
        of a matmul whose product is this rank's contribution (input chunk `me` unread)."""
        slot = self.next_slot()
        me = self.position
        chunks = _chunks(inp, self.flags.size)
        # No via (a team of two with `own`): the peer's chunk arrives in the output, as
        # `parts` says below, and nothing is read from or pushed into `received`.
        received = _chunks(via, self.flags.size) if via is not None else [out] * self.flags.size
        parts = self.own_and_received(chunks, received)
        if own is not None and self.output is not None:
            output = self.output()
            parts[self.lead(me)] = out  # pushed there by the lead: the own GEMM adds onto it in place
            sent = self.scatter_onto_outputs(chunks, received, lambda peer: peer_view(output, out, peer), output, slot)
        else:
            sent = self.scatter(chunks, received, slot)

        def complete() -> None:
            for peer in self.sources:
                self.receive(peer, slot, parts[peer])
            self.ordering.join(sent)
            if own is None:
                self.reduce_into(out, parts)
            else:
                self.reduce_onto_product(out, [parts[p] for p in self.sources], own)

        return CopyEngineWork(complete)

    def own_and_received(self, chunks: list[torch.Tensor], received: list[torch.Tensor]) -> list[torch.Tensor]:
        """Every member's chunk `me` in team order: this rank's in `chunks`, the others' in `received`."""
        return [chunks[p] if p == self.position else received[p] for p in range(self.flags.size)]

    def reduce_into(self, out: torch.Tensor, parts: list[torch.Tensor], stream=None) -> None:
        """On `stream` (default: the current one, where the work is enqueued)."""
        _reduce_into(out, parts, self.combine)
        self.ordering.touch(self.op, reads=parts, writes=[out], stream=stream)

    def scatter(self, chunks: list[torch.Tensor], received: list[torch.Tensor], slot: int):
        """Copy input chunk p into slot `me` of member p's `received`, for every other member
        p, then signal `slot`; chunk `me` is not read."""
        assert self.symmetric_via is not None  # the verifier: a via where chunks are pushed into one
        return self.push_and_signal(self.symmetric_via, lambda peer: self.push_chunk(chunks, received, peer), slot)

    def push_chunk(self, chunks: list[torch.Tensor], received: list[torch.Tensor], peer: int) -> torch.Tensor:
        """Input chunk `peer` into slot `me` of member `peer`'s `received`; the chunk read."""
        assert self.symmetric_via is not None  # the verifier: a via where chunks are pushed into one
        return _copy(peer_view(self.symmetric_via, received[self.position], peer), chunks[peer])

    def lead(self, position: int) -> int:
        """The lead of the member at `position`: the member whose push reaches it first
        (the first of its `sources`)."""
        return (position + 1) % self.flags.size

    def scatter_onto_outputs(self, chunks: list[torch.Tensor], received: list[torch.Tensor],
                             lead_target: Callable[[int], torch.Tensor], output: SymmetricTensor, slot: int):
        """`scatter`, but chunk p goes into `lead_target(p)`, a view of member p's instance of
        `output`, where this rank is member p's lead: the part p's own GEMM adds onto in place."""
        me = self.position

        def push(peer: int) -> torch.Tensor:
            if self.lead(peer) == me:
                return _copy(lead_target(peer), chunks[peer])
            return self.push_chunk(chunks, received, peer)

        into = (output,) if self.symmetric_via is None else (self.symmetric_via, output)
        return self.push_and_signal(into, push, slot)

    def reduce_onto_product(self, out: torch.Tensor, received: list[torch.Tensor], own: tuple[torch.Tensor, torch.Tensor],
                            stream=None) -> None:
        """out = a @ b + the sum of `received`, the first one added by the GEMM itself
        (beta = 1: the reduction in its epilogue), in place where it is `out` itself (else
        torch copies it into `out` first). `out` and `received` are flat chunks holding the
        product's rows in order; b is one K x N matrix."""
        a, b = own
        k, n = b.shape[-2:]
        if received[0] is out:
            out.view(-1, n).addmm_(a.reshape(-1, k), b.reshape(k, n))
        else:
            torch.addmm(received[0].view(-1, n), a.reshape(-1, k), b.reshape(k, n), out=out.view(-1, n))
        for part in received[1:]:
            out.add_(part)
        self.ordering.touch(self.op, reads=[*received, a, b], writes=[out], stream=stream)


class CopyEngineAllreduce(CopyEngineReduceScatter):
    """out = the reduction over the team of every member's input, as a reduce-scatter and
    then an all-gather of the reduced chunks (each member sends 2(D-1)/D of its input, as
    in a ring). The other members' input chunks arrive in `via` (a view of
    `symmetric_via`); their reduced chunks arrive in the output itself where it is a view
    of a symmetric buffer (`output()`, the instance of this run: a program result's set
    changes from run to run), else in the second half of `via` (then twice the input),
    from where they are copied into the output. With `own` and a symmetric output on a team
    of two, the one peer is the lead and there is no `via` (None).

    Posting sends the other members' chunks of the input (phase 1) and does not read this
    rank's own chunk, as a reduce-scatter's post. Waiting enqueues phase 2 on the
    communication stream, after the current stream's work so far (which computed the own
    chunk): wait for the other members' chunks, reduce the own chunk with them into the
    output (a small kernel there, not on the waiting stream), and push it into every other
    member's output (or `via`); the waiting stream then waits for the other members'
    reduced chunks. With `own` (a matmul's operands, `hir.allreduce ... own(...)`), phase 2
    computes this rank's part instead, onto the other members' chunks, on a stream of its
    own (`Ordering.fork_product`); with a symmetric output too, each member's lead pushes
    its chunk straight into that member's output, where the GEMM adds onto it in place (no
    copy of it into the output first)."""

    ALGORITHM = ALGORITHMS["hir.allreduce"]

    def post(self, inp: torch.Tensor, out: torch.Tensor, via: torch.Tensor | None = None,
             own: tuple[torch.Tensor, torch.Tensor] | None = None) -> CopyEngineWork:
        """`own`: the operands of a matmul whose product is this rank's contribution,
        computed on the product stream onto the other members' chunks (input chunk `me` unread)."""
        slot = self.next_slot()
        size, me = self.flags.size, self.position
        chunks, outs = _chunks(inp, size), _chunks(out, size)
        if self.output is None:
            assert via is not None and self.symmetric_via is not None  # the verifier: a via for the reduced chunks
            into = self.symmetric_via
            scattered, gathered = (_chunks(half, size) for half in via.view(2, -1).unbind(0))
        else:
            # No via (a team of two with `own`): the peer's chunk arrives in the output, as
            # `parts` says below, and nothing is read from or pushed into `scattered`.
            into, scattered, gathered = self.output(), _chunks(via, size) if via is not None else outs, outs
        parts = self.own_and_received(chunks, scattered)
        if own is not None and self.output is not None:
            parts[self.lead(me)] = outs[me]  # pushed there by the lead: the own GEMM adds onto it in place
            scattered_sent = self.scatter_onto_outputs(chunks, scattered, lambda peer: peer_view(into, outs[peer], peer),
                                                       into, slot)
        else:
            scattered_sent = self.scatter(chunks, scattered, slot)

        def complete() -> None:
            gathered_sent = self.reduce_and_gather(parts, outs[me], into, gathered, slot, own)
            for peer in self.sources:  # each part copied out as soon as it arrived
                self.receive(peer, slot + 1, gathered[peer])
                if gathered[peer] is not outs[peer]:
                    outs[peer].copy_(gathered[peer])
                    self.ordering.touch(self.op, reads=[gathered[peer]], writes=[outs[peer]])
            self.ordering.join(scattered_sent)
            self.ordering.join(gathered_sent)

        return CopyEngineWork(complete)

    def reduce_and_gather(self, parts: list[torch.Tensor], reduced: torch.Tensor, into: SymmetricTensor,
                          gathered: list[torch.Tensor], slot: int, own: tuple[torch.Tensor, torch.Tensor] | None):
        """Phase 2, on its communication stream: once the other members' chunks (phase 1's
        flags, `slot`) are in `parts`, reduce `parts` into `reduced`, push it into slot `me`
        of every other member's `gathered` (views of `into`) and signal `slot + 1`. With
        `own`, the reduction is `own`'s product onto the other members' chunks, on the
        product stream, which the pushes wait for."""
        me = self.position

        def receive(stream) -> None:
            for peer in self.sources:
                self.receive(peer, slot, parts[peer], stream)

        def reduce(stream) -> None:
            receive(stream)
            self.reduce_into(reduced, parts, stream)

        def pushes(target: torch.Tensor, source: torch.Tensor) -> Callable[[int], torch.Tensor]:
            """`source` into every peer's view of `target` (a view of this rank's instance of `into`)."""
            return lambda peer: _copy(peer_view(into, target, peer), source)

        if own is None:
            return self.push_and_signal(into, pushes(gathered[me], reduced), slot + 1, phase=2, before=reduce)
        ordering = self.ordering
        product = ordering.fork_product(self.lane(slot))
        count = self._product_pieces(own, slot)
        outs = _chunks(reduced, count)
        # The lead's part is the output itself (added onto in place): its pieces are the output's.
        received = [outs if part is reduced else _chunks(part, count) for part in (parts[p] for p in self.sources)]
        sent = _chunks(gathered[me], count)
        pieces = []
        with ordering.enqueue_on(product):
            receive(product)
            a, b = own
            rows = a.reshape(-1, b.shape[-2]).chunk(count)  # a copy, where reshape makes one, on the product stream
        for i in range(count):
            with ordering.enqueue_on(product):
                self.reduce_onto_product(outs[i], [part[i] for part in received], (rows[i], b), product)
            computed = ordering.mark((self.flags.team, slot, "product", i), product)
            pieces.append((computed, pushes(sent[i], outs[i])))
        return self.push_pieces_and_signal(into, pieces, slot + 1, phase=2)

    def _product_pieces(self, own: tuple[torch.Tensor, torch.Tensor], slot: int) -> int:
        """In how many blocks of rows the own product of the post whose first flag is `slot`
        is computed and pushed, each pushed as soon as it is computed: LAST_POST_PIECES for
        the run's last post (where nothing else is left to compute beside the push, which
        then overlaps the next block's GEMM), else one."""
        a, b = own
        rows = a.numel() // b.shape[-2]
        last = (slot - self.first_slot) // self.ALGORITHM.phases == self.posts - 1
        return LAST_POST_PIECES if last and rows % LAST_POST_PIECES == 0 else 1


def _copy(target: torch.Tensor, source: torch.Tensor) -> torch.Tensor:
    """target <- source (a push into a peer's memory); the tensor it read."""
    target.copy_(source)
    return source


def _chunks(flat: torch.Tensor, parts: int) -> list[torch.Tensor]:
    """A flat buffer as `parts` equal chunks (views)."""
    return list(flat.view(parts, -1).unbind(0))


def _reduce_into(out: torch.Tensor, parts: list[torch.Tensor], combine: Callable[..., torch.Tensor]) -> None:
    """out = parts[0] ∘ parts[1] ∘ ... in team order (the same order on every member)."""
    combine(parts[0], parts[1], out=out)
    for part in parts[2:]:
        combine(out, part, out=out)


# --------------------------------------------------------------------------- #
# One program's copy-engine state
# --------------------------------------------------------------------------- #


def posts_per_run(op: Operation) -> int:
    """How many times a run posts `op`: the product of its loops' constant trip counts."""
    count = 1
    for loop in enclosing_loops(op):
        lower, upper, step = (constant_integer(v) for v in (loop.lb, loop.ub, loop.step))
        if lower is None or upper is None or step is None or step <= 0:
            raise op_error(op, "a copy-engine collective needs loops with constant bounds (its flags are counted when the program is compiled)")
        count *= max(0, -(-(upper - lower) // step))
    return count


def _flags_of(op: hir.CollectiveOp) -> int:
    """Flag slots a copy-engine collective needs in a run."""
    algorithm = copy_engine_algorithm(op.name)
    assert algorithm is not None  # verified: a copy-engine collective has one
    return posts_per_run(op) * algorithm.phases


def _reduction(op: hir.CollectiveOp) -> ReduceKind:
    """The reduction kind of a copy-engine reduce-scatter or all-reduce."""
    assert op.reduction is not None  # verified: a reducing collective names its reduction
    return op.reduction.data


class CopyEngineProgram:
    """The symmetric buffers, flags and copy-engine collectives of one program on this
    rank, created when the program is compiled (collectively, in program order, by the
    members of each team) and reused by every run.

    Flags of a team: one slot per symmetric buffer (its release/acquire handshake: set
    means "the member at this position is done with its instance") and one per post of
    each copy-engine collective in a run.

    A symmetric buffer the program returns (a result the peers write into) has one
    instance per result set (runtime/result_sets.py), each with its handshake slot; a run
    uses the set `use_result_set` names (by default the scratch set, whose results are
    overwritten by the next run), the same on every member.
    """

    def __init__(self, program: hir.ProgramOp, rank: int, device: torch.device, groups, timeout: float,
                 current: Callable[[], object], hazards: Hazards | None = None, lanes: int = 1):
        """`current()`: the stream device work is enqueued on now; `lanes`: communication
        streams per phase (see `Ordering`); `hazards`: the stream hazard check of CPU
        ranks, if it is on."""
        self.rank = rank
        self.heap = SymmetricHeap(rank, device, groups, timeout)
        self.timeout = timeout
        self.ordering = Ordering(device, current, hazards, lanes)
        self.hazards = hazards
        self.buffers: dict[hir.AllocateOp, tuple[SymmetricTensor, Flags | None, int]] = {}
        """Each symmetric buffer of this rank: its instances, its team's flags (None: a
        team of one, which has no peer to hand it over to) and its handshake slot; for a
        returned one, those of the result set in use."""
        self.results: dict[hir.AllocateOp, list[tuple[SymmetricTensor, Flags | None, int]]] = {}
        """Each returned symmetric buffer's instances and handshake slot per result set."""
        self.result_positions = returned_symmetric_buffers(program)
        self.collectives: list[CopyEngineCollective] = []
        symmetric = [op for op in program.walk() if isinstance(op, hir.AllocateOp) and op.is_symmetric]
        posting = [op for op in program.walk() if isinstance(op, hir.CollectiveOp) and op.uses_copy_engine]
        self._slots: dict[Operation, int] = {}
        self.flags = self._create_flags(symmetric, posting)
        for op in symmetric:
            self._create_buffer(op)
        self.agreement = self._result_agreement()
        """How the members agree on each run's result set (None: no returned symmetric buffer, or no peer)."""

    def _team_of(self, op: Operation) -> tuple[int, ...]:
        if isinstance(op, hir.AllocateOp):
            return tensor_type(op.result).mesh.devices  # type: ignore[union-attr]  # verified: symmetric has a mesh
        return op.teams.devices  # type: ignore[attr-defined]  # verified: a copy-engine team is listed

    def _slots_of(self, op: hir.AllocateOp | hir.CollectiveOp) -> int:
        if isinstance(op, hir.CollectiveOp):
            return _flags_of(op)
        return RESULT_SETS + 1 if op in self.result_positions else 1

    def _create_flags(self, symmetric: list[hir.AllocateOp], posting: list[hir.CollectiveOp]) -> dict[tuple[int, ...], Flags]:
        """The flags of every team this rank is in, slots assigned in program order."""
        counts: dict[tuple[int, ...], int] = {}
        ops: list[hir.AllocateOp | hir.CollectiveOp] = [*symmetric, *posting]
        for op in ops:
            team = self._team_of(op)
            self._slots[op] = counts.get(team, 0)
            counts[team] = self._slots[op] + self._slots_of(op)
        flags = {}
        for team in sorted(counts):
            if self.rank in team and len(team) > 1:
                flags[team] = Flags(self.heap, team, counts[team])
        for op in symmetric:  # initially every member is done with its instance (a result set: released when used)
            team = self._team_of(op)
            if team in flags and op not in self.result_positions:
                flags[team].set_local(self._slots[op], 1)
        for team in flags:
            self.heap.barrier(team)
        return flags

    def _create_buffer(self, op: hir.AllocateOp) -> None:
        t = tensor_type(op.result)
        team = self._team_of(op)
        if self.rank not in team:
            return
        shape = logical_shape(t, self.rank)
        if DYNAMIC in shape:
            raise op_error(op, "a symmetric buffer needs a static local shape (it is allocated when the program is compiled)")
        perm = t.value_allocation_order() or tuple(range(len(shape)))
        logical = [perm.index(d) for d in range(len(perm))]
        instances = []
        for k in range(self._slots_of(op)):
            dense = self.heap.allocate(team, [shape[p] for p in perm], torch_dtype(t))
            symmetric = SymmetricTensor(team, dense.position, [dense.peer(p).permute(logical) for p in range(len(team))])
            instances.append((symmetric, self.flags.get(team), self._slots[op] + k))
        if op in self.result_positions:
            self.results[op] = instances
        self.buffers[op] = instances[-1]  # a returned one's: the scratch set, the last, until a run names another

    def use_result_set(self, k: int) -> None:
        """This run computes its returned symmetric buffers into result set `k`."""
        for op, instances in self.results.items():
            self.buffers[op] = instances[k]

    def result_buffers(self, k: int) -> dict[int, torch.Tensor]:
        """This rank's instances of result set `k`, by result position."""
        return {self.result_positions[op]: instances[k][0].local for op, instances in self.results.items()}

    def _result_agreement(self) -> HostAgreement | None:
        """The agreement on result sets among the members of the team of the returned
        symmetric buffers (None: this rank has none, or no peer)."""
        teams = {instances[0][0].team for instances in self.results.values()}
        if not teams:
            return None
        if len(teams) > 1:
            raise op_error(next(iter(self.results)), "the program returns symmetric buffers of several teams; "
                                                     "their result sets are agreed in one team")
        team = teams.pop()
        return HostAgreement(self.heap, team, self.timeout) if len(team) > 1 else None

    # -- what the evaluator's steps call ------------------------------------------
    def begin_run(self) -> None:
        for collective in self.collectives:
            collective.begin_run()

    def acquire(self, op: hir.AllocateOp) -> Callable[[], torch.Tensor]:
        """The step of `hir.allocate symmetric`: hand out this rank's instance, acquired
        (`Ordering.acquire`): the pushes into the peers' instances wait until the peers
        are done with them (their previous run). A returned buffer's instance is that of
        the run's result set, released to the peers first (after the caller's work so far
        on the current stream, which may still read the set's earlier results)."""
        ordering = self.ordering

        result = op in self.results

        def acquire() -> torch.Tensor:
            symmetric, flags, slot = self.buffers[op]
            ordering.acquire(symmetric, (symmetric.team, slot, "acquired"), _waiting_for_peers(symmetric, flags, slot),
                             result)
            return symmetric.local

        if not result:
            return acquire
        # Not joining the acquiring stream: this run has not acquired the set yet, and the
        # set's last acquisition (an event of an earlier run) must not be waited for in a
        # CUDA graph capture. This run's pushes join this run's acquisition.
        release = self._release(op, joins_acquisition=False)

        def acquire_result() -> torch.Tensor:
            release()
            return acquire()

        return acquire_result

    def release(self, op: hir.AllocateOp, deallocate: hir.DeallocateOp) -> Callable[[], None]:
        """The step of `deallocate` of the symmetric buffer `op`: tell every peer, after
        this rank's prior work, that it may write into this rank's instance again."""
        return self._release(op, deallocate)

    def _release(self, op: hir.AllocateOp, deallocate: hir.DeallocateOp | None = None,
                 joins_acquisition: bool = True) -> Callable[[], None]:
        ordering, hazards = self.ordering, self.hazards

        def release() -> None:
            symmetric, flags, slot = self.buffers[op]
            if joins_acquisition:
                # The acquiring stream's wait rejoins the current stream here even where nothing
                # was pushed (a CUDA graph capture must end with every stream it forked joined).
                ordering.join(ordering.acquisition(symmetric))
            if hazards is not None:
                hazards.release(hazards.current_stream(), deallocate or op, symmetric.local)
            stream = ordering.current()
            if flags is not None:  # None: a team of one, no peer to tell
                for peer in _peers(symmetric):
                    flags.signal(peer, slot, stream)

        return release

    def collective(self, op: hir.CollectiveOp) -> CopyEngineCollective:
        """The copy-engine algorithm of `op` on this rank (a member of its team)."""
        team = op.teams.devices
        flags, first, slots = self.flags[team], self._slots[op], posts_per_run(op)
        if isinstance(op, hir.AllgatherOp):
            collective: CopyEngineCollective = CopyEngineAllgather(flags, first, slots, self.ordering,
                                                                   self._symmetric(op, op.output), op,
                                                                   fills_own_slot=op.fills_own_slot)
        else:
            kind = CopyEngineReduceScatter if isinstance(op, hir.ReduceScatterOp) else CopyEngineAllreduce
            via = self._symmetric(op, op.via) if op.via is not None else None  # the verifier: none only where unused
            collective = kind(flags, first, slots, self.ordering, via, _reduction(op), op, self._symmetric_output(op))
        self.collectives.append(collective)
        return collective

    def _symmetric(self, op: Operation, view: SSAValue | None) -> SymmetricTensor:
        root = hir.view_root(view) if view is not None else None
        allocate = root.owner if root is not None else None
        if not isinstance(allocate, hir.AllocateOp) or allocate not in self.buffers:
            raise op_error(op, "a copy-engine collective writes into other members' buffers: its "
                               f"{'output' if isinstance(op, hir.AllgatherOp) else 'via buffer'} must be a view of a `hir.allocate symmetric`")
        return self.buffers[allocate][0]

    def _symmetric_output(self, op: hir.CollectiveOp) -> Callable[[], SymmetricTensor] | None:
        """Where the output of `op` is a view of a symmetric buffer, its instance in this run."""
        allocate = hir.view_root(op.output).owner
        if not isinstance(allocate, hir.AllocateOp) or allocate not in self.buffers:
            return None
        return lambda: self.buffers[allocate][0]


def _peers(symmetric: SymmetricTensor) -> list[int]:
    return [p for p in range(len(symmetric.team)) if p != symmetric.position]


def _waiting_for_peers(symmetric: SymmetricTensor, flags: Flags | None, slot: int) -> Callable[[object], None]:
    """What makes a stream wait until every peer released its instance of `symmetric`."""
    def wait_for_peers(stream) -> None:
        if flags is not None:  # None: a team of one, no peer to wait for
            for peer in _peers(symmetric):
                flags.wait(peer, slot, stream)

    return wait_for_peers


def returned_symmetric_buffers(program: hir.ProgramOp) -> dict[hir.AllocateOp, int]:
    """The symmetric buffers `program` returns (results its peers write into), each with
    its first position among the results. One is returned only as itself: it is handed out
    as one of its result sets (runtime/result_sets.py), whereas a view of it would be
    handed out as the one instance every run reuses."""
    terminator = program.body.block.last_op
    assert terminator is not None  # a verified program ends with its return
    roots = buffer_roots(program)
    returned: dict[hir.AllocateOp, int] = {}
    for position, value in enumerate(terminator.operands):
        owner = roots.get(value, value).owner
        if not isinstance(owner, hir.AllocateOp) or not owner.is_symmetric:
            continue
        if value is not owner.result:
            raise op_error(terminator, f"returns result #{position}, which shares the memory of a symmetric buffer "
                                       "without being it; the next run would overwrite it. Return the buffer itself")
        returned.setdefault(owner, position)
    return returned
