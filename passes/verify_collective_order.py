"""`verify-collective-order`: refuse a host program whose ranks would wait forever for
each other's collectives or transfers, before it runs.

Every rank runs the same program text, but not the same communication. A rank skips a
collective whose team leaves it out and a transfer of a buffer whose mesh leaves it out
(`takes_part` on the op, which the evaluator asks too), and the peers of `hir.send` and
`hir.recv`, loop bounds and branch conditions are index values that may depend on the rank.
So the pass *projects* the program onto every rank of the world (option `world-size`,
default: the largest device the program names, plus one): it reads the program's index
arithmetic for that rank (constants, `arith`, `hir.extent`, `hir.number_of_streams`,
`hir.team_position`) and lists the communication the rank posts, in order. Then it
replays the ranks together as NCCL runs them, each rank's posts completing in program
order: a collective completes when every member of its team posts it next, with the same
op, root, reduction, element type, buffer sizes and transport (for the copy engine, the
very same op: each has flags of its own); a send completes with its peer's receive from
this rank, of the same size. The first post that can never complete, or whose ends
disagree, is reported at its op, with the rank that does not answer.

A loop, and a branch on a value that is unknown but the same on every rank (a dynamic
extent of a tensor, the number of streams), is checked once for a generic iteration or
for each branch: the ranks that communicate in it must all reach it, with the same
bounds or condition. That is the whole check for most programs, and it does not grow with
the trip count: a ring of D shifts over D ranks is one generic shift per rank (rank r
sends to the member k places before it and receives from the one k after, whatever k is),
not D^2 posts replayed. Where that check refuses a program, it is checked again with the
loops of constant bounds unrolled (up to `UNROLL_BUDGET` ops per rank): a loop whose
iterations differ (a peer computed from its index, a trip count that depends on the
rank) may still be right, and if it is not, the first post that cannot complete is
reported at its iteration. A loop bound, branch condition or peer that may differ between
ranks in a way the pass cannot read (a program argument, an op it does not model) is
refused when the loop or branch communicates, or the peer is needed.

Adding a communication op is one entry in `PROJECTIONS`: a function from the op to the
posts of the rank being projected.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

from xdsl.context import Context
from xdsl.dialects import arith, scf
from xdsl.dialects.builtin import ModuleOp
from xdsl.ir import Block, BlockArgument, Operation, SSAValue
from xdsl.passes import ModulePass

from hostir_dialect import arith_semantics, hir
from hostir_dialect.diagnostics import HostIRError, location_of, op_error
from hostir_dialect.sharding import largest_device
from hostir_dialect.symbols import devices_needed, ops_in, programs
from hostir_dialect.tensor_type import DYNAMIC, TensorType, tensor_type

UNROLL_BUDGET = 100_000
"""Ops one rank's projection may visit while unrolling loops (in the second check); a loop
that would exceed it is checked for a generic iteration instead."""


@dataclass(frozen=True)
class VerifyCollectiveOrder(ModulePass):
    """Refuse host programs whose ranks would wait forever for each other's collectives or transfers."""

    name = "verify-collective-order"

    world_size: int | None = None
    """Ranks to check the programs for; default: the largest device they name, plus one."""

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        if self.world_size is not None and self.world_size < 1:
            raise ValueError(f"world-size must be at least 1, got {self.world_size}")
        for program in programs(op):
            verify_program(program, self.world_size)


MAX_VERIFIED_WORLD = 1 << 20
"""The most ranks the pass replays: a program's world is its largest device id + 1, which
one mesh of a tiny file can make 2**63 (each rank's projection is kept)."""


def verify_program(program: hir.ProgramOp, world_size: int | None = None) -> None:
    """Raise a located HostIRError at the first communication the ranks would disagree on."""
    if world_size is None:
        world_size = (largest_device(program) or 0) + 1
    if world_size > MAX_VERIFIED_WORLD:
        _, where, op = devices_needed(program)
        raise op_error(op or program, f"a world of {world_size} ranks ({where}) is more than the {MAX_VERIFIED_WORLD} "
                                      f"ranks {VerifyCollectiveOrder.name} replays")
    facts = OpFacts(program, world_size)
    try:
        _replay(program, facts, unroll=False)
    except HostIRError:
        _replay(program, facts, unroll=True)  # decides, and says where (the module docstring)


def _replay(program: hir.ProgramOp, facts: OpFacts, unroll: bool) -> None:
    """Project the program onto every rank and replay the ranks together; `unroll`:
    loops of constant bounds iteration by iteration, within the budget."""
    ranks = range(facts.world_size)
    posts = {rank: Projection(rank, facts, unroll).block(program.body.block) for rank in ranks}
    Replay(facts.order, _participants(posts)).run(posts)


# --------------------------------------------------------------------------- #
# Values: what one rank knows about an index value before the run
# --------------------------------------------------------------------------- #


@dataclass(frozen=True)
class Symbolic:
    """A value unknown before the run, written as an expression over values that are the
    same on every rank (a dynamic extent, the number of streams, the index of a loop that
    is not unrolled) and this rank's constants: ranks whose expressions are equal hold
    equal values."""

    expression: tuple

    def __str__(self) -> str:
        head, *operands = self.expression
        if head == "index":
            return f"the index of {_show(operands[0])}"
        return f"{head}({', '.join(_show(o) for o in operands)})"


@dataclass(frozen=True)
class Varying:
    """A value that may differ between ranks and cannot be read before the run."""

    origin: str
    """What it depends on, for diagnostics."""


Value = int | bool | float | Symbolic | Varying


def _show(value: Any) -> str:
    if isinstance(value, SSAValue):
        return _value_name(value)
    if isinstance(value, Operation):
        return f"'{value.name}' at {location_of(value) or 'an unknown location'}"
    return str(value)


def _value_name(value: SSAValue) -> str:
    return f"%{value.name_hint}" if value.name_hint else "a value"


def _combine(name: str, function: Callable[..., Any], operands: Sequence[Value]) -> Value:
    """`function` of known operands; else an expression, or the first varying operand."""
    varying = next((o for o in operands if isinstance(o, Varying)), None)
    if varying is not None:
        return varying
    if any(isinstance(o, Symbolic) for o in operands):
        return Symbolic((name, *operands))
    return function(*operands)


# --------------------------------------------------------------------------- #
# Posts: what one rank sends into the network, in order
# --------------------------------------------------------------------------- #


@dataclass(frozen=True)
class Post:
    """One collective or transfer a rank posts."""

    op: Operation
    channel: tuple
    """Posts that complete together have the same channel: ("team", team) for a
    collective, ("transfer", sender, receiver) for both ends of a transfer."""
    members: tuple[int, ...]
    """The ranks that post on the channel, this one and the others that must post it
    next (a team's tuple, shared by its members' posts)."""
    signature: tuple
    """What every end must agree on."""
    iteration: tuple[int | None, ...]
    """Iterations of the enclosing loops (None: a generic one), for diagnostics."""


@dataclass(frozen=True)
class Summary:
    """A loop or branch whose communication is checked for a generic iteration, or for
    each branch: the ranks that communicate in it must reach it together."""

    op: Operation
    key: tuple
    """The loop bounds, or the branch condition: the same on every participant."""
    bodies: tuple[tuple[Event, ...], ...]
    iteration: tuple[int | None, ...]

    @property
    def channel(self) -> tuple:
        return ("summary", self.op, self.iteration)


Event = Post | Summary


def _size(t: TensorType, rank: int | None = None) -> int | tuple[int, ...]:
    """Elements in one rank's buffer of `t` (the local shape when it is dynamic)."""
    shape = t.local_shape(rank)
    assert shape is not None
    return shape if DYNAMIC in shape else math.prod(shape)


def _show_size(size: int | tuple[int, ...]) -> str:
    if isinstance(size, int):
        return f"{size} elements"
    return "a buffer of shape [" + ", ".join("?" if e == DYNAMIC else str(e) for e in size) + "]"


# --------------------------------------------------------------------------- #
# Projection: one rank's posts
# --------------------------------------------------------------------------- #

Rule = Callable[["Projection", Any], Iterable[Event]]
"""How projecting an op of a kind affects one rank (PROJECTIONS)."""


class OpFacts:
    """What projecting an op finds that is the same on every rank and in every iteration,
    worked out once per program: every rank's projection meets each op, and each op of an
    unrolled loop once per trip."""

    def __init__(self, program: hir.ProgramOp, world_size: int) -> None:
        self.world_size = world_size
        self.order = {op: position for position, op in enumerate(ops_in(program))}
        """Each op's place in the program, for the first post that cannot complete."""
        _refuse_unmodelled_communication(program)
        self.collectives: dict[Operation, tuple[hir.Team, tuple]] = {}
        """Each collective -> its teams, and what every member must post with it."""
        self.posters: dict[tuple[Operation, int], bool] = {}
        """(collective, rank) -> does the rank post it (its buffers checked)?"""
        self.blocks: dict[Block, tuple[int, list[tuple[int, Operation, Rule]]]] = {}
        """`modelled_ops` of each block projected before."""
        self.sizes: dict[Block, int] = {}
        """The ops in each block, nested ones included (`body_size`)."""
        self.silent_loops: dict[scf.ForOp, bool] = {}

    def modelled_ops(self, block: Block) -> tuple[int, list[tuple[int, Operation, Rule]]]:
        """The block's number of ops, and the ops PROJECTIONS models with their positions
        (from 1) and rules (the others do not communicate: checked for the program)."""
        if block not in self.blocks:
            modelled: list[tuple[int, Operation, Rule]] = []
            size = 0
            for size, op in enumerate(block.ops, start=1):
                rule = PROJECTIONS.get(type(op))
                if rule is not None:
                    modelled.append((size, op, rule))
            self.blocks[block] = (size, modelled)
        return self.blocks[block]

    def body_size(self, loop: scf.ForOp) -> int:
        """The ops in the loop's body, nested ones included (each block counted once)."""
        return self._size(loop.body.block)

    def _size(self, block: Block) -> int:
        if block not in self.sizes:
            self.sizes[block] = sum(1 + sum(self._size(b) for r in op.regions for b in r.blocks) for op in block.ops)
        return self.sizes[block]

    def silent(self, loop: scf.ForOp) -> bool:
        """A loop without results whose body holds no post, loop or branch: projecting it
        adds no post and defines only values of its body, on every rank and trip (so a
        pipeline's synchronizing loops are not unrolled)."""
        if loop not in self.silent_loops:
            _, modelled = self.modelled_ops(loop.body.block)
            self.silent_loops[loop] = not loop.results and all(rule in _SILENT_RULES for _, _, rule in modelled)
        return self.silent_loops[loop]

    def posts(self, op: hir.CollectiveOp, rank: int) -> bool:
        key = (op, rank)
        if key not in self.posters:
            takes_part = op.takes_part(rank)
            if takes_part:
                _refuse_missing_buffers(op, rank)
            self.posters[key] = takes_part
        return self.posters[key]

    def collective(self, op: hir.CollectiveOp) -> tuple[hir.Team, tuple]:
        """The op's teams and what every member must post with it; its team checked to fit
        in the world."""
        if op not in self.collectives:
            teams = op.teams
            outside = [d for d in teams.devices if not 0 <= d < self.world_size]
            if outside:
                raise op_error(op, f"team {teams} names devices {outside} outside the world of {self.world_size} ranks")
            in_type, out_type = tensor_type(op.input), tensor_type(op.output)
            reduction = op.reduction.data if op.reduction is not None else None
            # Copy-engine posts pair by op: each op has flags of its own (runtime/copy_engine.py).
            instance = op if op.uses_copy_engine else None
            signature = (op.name, op.root_id, reduction, in_type.element_type, _size(in_type), _size(out_type),
                         op.transport.data, instance)
            self.collectives[op] = (teams, signature)
        return self.collectives[op]


class Projection:
    """A program as one rank of the world runs it: its index values and its posts."""

    def __init__(self, rank: int, facts: OpFacts, unroll: bool):
        self.rank = rank
        self.world_size = facts.world_size
        self.facts = facts
        self.unroll = unroll
        """Unroll loops of constant bounds (within the budget), or check each once."""
        self.values: dict[SSAValue, Value] = {}
        self.iteration: tuple[int | None, ...] = ()
        self.budget = UNROLL_BUDGET

    def block(self, block: Block) -> list[Event]:
        size, modelled = self.facts.modelled_ops(block)
        events: list[Event] = []
        visited = 0
        for position, op, rule in modelled:
            self.budget -= position - visited  # one per op up to this one: a nested loop reads it
            visited = position
            events.extend(rule(self, op))
        self.budget -= size - visited
        return events

    def value(self, value: SSAValue) -> Value:
        if value in self.values:
            return self.values[value]
        if isinstance(value, BlockArgument):
            owner = value.block.parent_op()
            if isinstance(owner, hir.ProgramOp):
                return Varying(f"{_value_name(value)}, an argument of @{owner.sym_name.data}")
            return Varying(f"{_value_name(value)}, an argument of {_show(owner)}")
        return Varying(f"{_value_name(value)}, a result of {_show(value.owner)}, which this pass cannot read")

    def set(self, values: Iterable[SSAValue], computed: Iterable[Value]) -> None:
        for value, known in zip(values, computed, strict=True):
            self.values[value] = known

    @contextmanager
    def in_iteration(self, index: int | None):
        outer = self.iteration
        self.iteration = (*outer, index)
        try:
            yield
        finally:
            self.iteration = outer


def _refuse_unmodelled_communication(op: Operation) -> None:
    """An op the projection does not know must not communicate, directly or inside."""
    for inner in ops_in(op):
        if any(isinstance(r.type, hir.WorkType) for r in inner.results) and type(inner) not in PROJECTIONS:
            raise op_error(inner, "communicates, but verify-collective-order cannot tell which ranks post it; "
                                  "give it an entry in PROJECTIONS")


# -- index values -------------------------------------------------------------


def _constant(p: Projection, op: arith.ConstantOp) -> Iterable[Event]:
    try:
        p.set(op.results, [arith_semantics.constant_value(op)])
    except ValueError:
        pass  # a tensor constant: never a peer, a bound or a condition
    return ()


def _binary(p: Projection, op: Operation) -> Iterable[Event]:
    function = arith_semantics.BINARY[type(op)]
    try:
        result = _combine(op.name.removeprefix("arith."), function, [p.value(o) for o in op.operands])
    except ZeroDivisionError:
        result = Varying(f"{_show(op)}, a division by zero that fails the run")
    p.set(op.results, [result])
    return ()


def _cast(p: Projection, op: Operation) -> Iterable[Event]:
    p.set(op.results, [p.value(op.operands[0])])
    return ()


def _compare(p: Projection, op: arith.CmpiOp) -> Iterable[Event]:
    predicate = op.predicate.value.data
    function = arith_semantics.comparison(predicate)
    name = arith.CMPI_COMPARISON_OPERATIONS[predicate]
    p.set(op.results, [_combine(name, function, [p.value(op.lhs), p.value(op.rhs)])])
    return ()


def _select(p: Projection, op: arith.SelectOp) -> Iterable[Event]:
    p.set(op.results, [_choose(p.value(op.cond), p.value(op.lhs), p.value(op.rhs))])
    return ()


def _choose(condition: Value, if_true: Value, if_false: Value) -> Value:
    if isinstance(condition, Varying):
        return condition
    if isinstance(condition, Symbolic):
        return if_true if if_true == if_false else Symbolic(("select", condition, if_true, if_false))
    return if_true if condition else if_false


def _number_of_streams(p: Projection, op: hir.NumberOfStreamsOp) -> Iterable[Event]:
    p.set(op.results, [Symbolic(("number_of_streams",))])  # a run parameter, the same on every rank
    return ()


def _team_position(p: Projection, op: hir.TeamPositionOp) -> Iterable[Event]:
    p.set(op.results, [op.position_of(p.rank)])
    return ()


def _extent(p: Projection, op: hir.ExtentOp) -> Iterable[Event]:
    t, axis = tensor_type(op.input), op.axis_index
    if t.axes[axis].extent != DYNAMIC:
        extent: Value = t.axes[axis].extent
    elif t.is_on_rank(p.rank):
        # The global extent, read from this rank's shard: the same tensor on every rank.
        extent = Symbolic(("extent", op.input, axis))
    else:
        extent = Varying(f"the extent of {_value_name(op.input)}, which rank {p.rank} does not hold")
    p.set(op.results, [extent])
    return ()


# -- communication ------------------------------------------------------------


def _collective(p: Projection, op: hir.CollectiveOp) -> Iterable[Event]:
    teams, signature = p.facts.collective(op)
    if not p.facts.posts(op, p.rank):
        return ()
    team = teams.members(p.rank)
    assert team is not None  # it posts
    return (Post(op, ("team", team), team, signature, p.iteration),)


def _refuse_missing_buffers(op: hir.CollectiveOp, rank: int) -> None:
    """A member must hold the buffers it posts."""
    buffers = [(op.input, op.needs_input(rank), "input"), (op.output, op.needs_output(rank), "output")]
    if op.via is not None:
        buffers.append((op.via, True, "via"))  # a copy-engine post reads all of its buffers
    for buffer, needed, what in buffers:
        t = tensor_type(buffer)
        if needed and not t.is_on_rank(rank):
            team = op.team_of(rank) or ()
            others = ", ".join(str(d) for d in team if d != rank)
            raise op_error(op, f"rank {rank} of team {hir.Team.of(team)} holds no {what} buffer (its mesh is {t.mesh}), "
                               f"so it cannot post it and rank(s) {others} would wait for it forever")


def _transfer(p: Projection, op: hir.PointToPointOp) -> Iterable[Event]:
    if not op.takes_part(p.rank):
        return ()
    peer = p.value(op.peer)
    if isinstance(peer, (Symbolic, Varying)):
        unknown = f"depends on {peer.origin}" if isinstance(peer, Varying) else f"is {peer}, unknown before the run"
        raise op_error(op, f"cannot be verified: its peer on rank {p.rank} {unknown}")
    if not isinstance(peer, int) or not 0 <= peer < p.world_size or peer == p.rank:
        raise op_error(op, f"on rank {p.rank}, peer {peer} is not another rank of the world of {p.world_size}")
    t = tensor_type(op.buffer)
    ends = (p.rank, peer) if isinstance(op, hir.SendOp) else (peer, p.rank)
    return (Post(op, ("transfer", *ends), ends, (t.element_type, _size(t, p.rank)), p.iteration),)


# -- control flow -------------------------------------------------------------


def _loop(p: Projection, op: scf.ForOp) -> Iterable[Event]:
    body = op.body.block
    bounds = lower, upper, step = (p.value(op.lb), p.value(op.ub), p.value(op.step))
    if isinstance(lower, int) and isinstance(upper, int) and isinstance(step, int):
        if step == 0:
            raise op_error(op, "has step 0: every rank fails when it reaches it")
        trips = range(lower, upper, step)
        if p.facts.silent(op):
            return ()
        if p.unroll and len(trips) * p.facts.body_size(op) <= p.budget:
            return _unrolled(p, op, trips)
    carried = Varying(f"a value carried across the iterations of {_show(op)}")
    p.values[body.args[0]] = Symbolic(("index", op, p.iteration))
    p.set(body.args[1:], [carried] * len(op.iter_args))
    with p.in_iteration(None):
        events = tuple(p.block(body))
    p.set(op.results, [carried] * len(op.results))
    if not events:
        return ()
    varying = next((b for b in bounds if isinstance(b, Varying)), None)
    if varying is not None:
        raise op_error(op, f"communicates in its body, but its bounds may differ between ranks: they depend on "
                           f"{varying.origin}")
    return (Summary(op, bounds, (events,), p.iteration),)


def _unrolled(p: Projection, op: scf.ForOp, trips: range) -> list[Event]:
    body = op.body.block
    carried = [p.value(v) for v in op.iter_args]
    events: list[Event] = []
    for index, i in enumerate(trips):
        p.values[body.args[0]] = i
        p.set(body.args[1:], carried)
        with p.in_iteration(index):
            events += p.block(body)
        carried = [p.value(v) for v in body.last_op.operands] if body.last_op else []
    p.set(op.results, carried)
    return events


def _branch(p: Projection, op: scf.IfOp) -> Iterable[Event]:
    condition = p.value(op.cond)
    if isinstance(condition, (bool, int)):
        region = op.true_region if condition else op.false_region
        events, yielded = _region(p, region)
        p.set(op.results, yielded)
        return events
    (then_events, then_yield), (else_events, else_yield) = _region(p, op.true_region), _region(p, op.false_region)
    p.set(op.results, [_choose(condition, a, b) for a, b in zip(then_yield, else_yield)])
    if not then_events and not else_events:
        return ()
    if isinstance(condition, Varying):
        raise op_error(op, f"communicates in a branch, but its condition may differ between ranks: it depends on "
                           f"{condition.origin}")
    return (Summary(op, (condition,), (tuple(then_events), tuple(else_events)), p.iteration),)


def _region(p: Projection, region) -> tuple[list[Event], list[Value]]:
    if not region.blocks:
        return [], []
    block = region.block
    events = p.block(block)
    return events, [p.value(v) for v in block.last_op.operands] if block.last_op else []


def _nothing(p: Projection, op: Operation) -> Iterable[Event]:
    return ()


PROJECTIONS: dict[type[Operation], Rule] = {
    arith.ConstantOp: _constant,
    arith.CmpiOp: _compare,
    arith.SelectOp: _select,
    **{cls: _binary for cls in arith_semantics.BINARY},
    **{cls: _cast for cls in arith_semantics.CASTS},
    hir.NumberOfStreamsOp: _number_of_streams,
    hir.TeamPositionOp: _team_position,
    hir.ExtentOp: _extent,
    **{cls: _collective for cls in hir.COLLECTIVE_OPS},
    hir.SendOp: _transfer,
    hir.RecvOp: _transfer,
    scf.ForOp: _loop,
    scf.IfOp: _branch,
    hir.WaitOp: _nothing,  # posts complete in order here, so a wait adds nothing
}
"""How each op the projection reads affects one rank: the index values it defines and the
posts it makes. Ops not listed are skipped (after checking they do not communicate)."""

_SILENT_RULES = {_constant, _compare, _select, _binary, _cast, _number_of_streams, _team_position, _extent, _nothing}
"""The rules that define index values and post nothing (`_nothing`: a wait)."""


# --------------------------------------------------------------------------- #
# Replay: the ranks' posts, together
# --------------------------------------------------------------------------- #


def _participants(posts: Mapping[int, Sequence[Event]]) -> dict[tuple, tuple[int, ...]]:
    """Summary channel -> the ranks that communicate in it, in order."""
    found: dict[tuple, set[int]] = {}

    def visit(rank: int, events: Iterable[Event]) -> None:
        for event in events:
            if isinstance(event, Summary):
                found.setdefault(event.channel, set()).add(rank)
                for body in event.bodies:
                    visit(rank, body)

    for rank, events in posts.items():
        visit(rank, events)
    return {channel: tuple(sorted(ranks)) for channel, ranks in found.items()}


class Replay:
    """Runs every rank's posts in order, completing those whose partners post them next."""

    def __init__(self, order: Mapping[Operation, int], participants: Mapping[tuple, tuple[int, ...]]):
        self.order = order
        self.participants = participants

    def partners(self, event: Event, rank: int) -> list[int]:
        """The other ranks that must post `event` next."""
        members = event.members if isinstance(event, Post) else self.participants[event.channel]
        return [member for member in members if member != rank]

    def run(self, posts: Mapping[int, Sequence[Event]]) -> None:
        position = dict.fromkeys(posts, 0)

        def head(rank: int) -> Event | None:
            events = posts.get(rank, ())
            return events[position[rank]] if position.get(rank, 0) < len(events) else None

        progressed = True
        while progressed:
            progressed = False
            for rank in sorted(posts):
                event = head(rank)
                if event is None:
                    continue
                partners = self.partners(event, rank)
                heads = {partner: head(partner) for partner in partners}
                ready = {p: other for p, other in heads.items() if other is not None and other.channel == event.channel}
                if len(ready) == len(partners):
                    self.complete(event, rank, ready)
                    for member in (rank, *partners):
                        position[member] += 1
                    progressed = True
        stuck = [(self.order[event.op], rank, event) for rank in posts if (event := head(rank)) is not None]
        if stuck:
            _, rank, event = min(stuck, key=lambda s: (s[0], s[1]))
            raise self.blocked(event, rank, {p: head(p) for p in self.partners(event, rank)})

    def complete(self, event: Event, rank: int, heads: dict[int, Event]) -> None:
        """Check that the ends of a post agree; replay the bodies of a summary."""
        for partner, other in heads.items():
            if isinstance(event, Post):
                assert isinstance(other, Post)
                if other.signature != event.signature:
                    raise _disagreement(event, rank, other, partner)
            elif isinstance(other, Summary) and other.key != event.key:
                raise op_error(event.op, f"ranks may disagree on it{_where(event)}: rank {rank} runs it with "
                                         f"{_show_key(event)} where rank {partner} runs it with {_show_key(other)}")
        if isinstance(event, Summary):
            summaries = {rank: event}
            for partner, other in heads.items():
                assert isinstance(other, Summary), "a loop's channel holds the summaries of that loop only"
                summaries[partner] = other
            for index in range(len(event.bodies)):
                self.run({member: summary.bodies[index] for member, summary in summaries.items()})

    def blocked(self, event: Event, rank: int, heads: dict[int, Event | None]) -> HostIRError:
        partner, other = next((p, h) for p, h in heads.items() if h is None or h.channel != event.channel)
        answer = "is waiting in " + _show(other.op) + _where(other) if other is not None else _never(event, partner)
        return op_error(event.op, f"would wait forever{_where(event)}: {_what(event, rank)}, "
                                  f"but rank {partner} {answer}")


def _what(event: Event, rank: int) -> str:
    if isinstance(event, Summary):
        return f"rank {rank} communicates in it"
    if event.channel[0] == "team":
        return f"rank {rank} posts it on team {list(event.channel[1])}"
    _, sender, receiver = event.channel
    element, size = event.signature
    if rank == sender:
        return f"rank {sender} sends {_show_size(size)} of {element} to rank {receiver}"
    return f"rank {receiver} receives {_show_size(size)} of {element} from rank {sender}"


def _never(event: Event, partner: int) -> str:
    if isinstance(event, Post) and event.channel[0] == "transfer":
        _, sender, receiver = event.channel
        return "never posts the matching hir.recv" if partner == receiver else f"never sends to rank {receiver}"
    return "never posts it"


def _where(event: Event) -> str:
    if not event.iteration:
        return ""
    return " (loop iteration " + ", ".join("any" if i is None else str(i) for i in event.iteration) + ")"


def _show_key(summary: Summary) -> str:
    if isinstance(summary.op, scf.ForOp):
        lower, upper, step = (_show(v) for v in summary.key)
        return f"bounds {lower} to {upper} step {step}"
    return f"condition {_show(summary.key[0])}"


_FIELDS = ("op", "root", "reduction", "element type", "input size", "output size", "transport",
           "copy-engine collective")


def _disagreement(event: Post, rank: int, other: Post, partner: int) -> HostIRError:
    """The first thing two ends of a post disagree on."""
    if event.channel[0] == "transfer":
        return op_error(event.op, f"the ends of a transfer disagree{_where(event)}: {_what(event, rank)}, but "
                                  f"{_what(other, partner)} ({_show(other.op)})")
    field, mine, theirs = next((f, a, b) for f, a, b in zip(_FIELDS, event.signature, other.signature) if a != b)
    if field == "op":
        return op_error(event.op, f"ranks disagree{_where(event)}: rank {rank} posts '{mine}' on team "
                                  f"{list(event.channel[1])} where rank {partner} posts {_show(other.op)}")
    if field.endswith("size"):
        mine, theirs = _show_size(mine), _show_size(theirs)
    if field == "copy-engine collective":
        return op_error(event.op, f"ranks disagree{_where(event)}: rank {rank} posts it where rank {partner} posts "
                                  f"{_show(other.op)}, but copy-engine collectives pair only with the same op")
    return op_error(event.op, f"ranks disagree on the {field}{_where(event)}: rank {rank} posts it with {mine} "
                              f"where rank {partner} posts {_show(other.op)} with {theirs}")
