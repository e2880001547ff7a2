"""Collectives of a host program on top of torch.distributed.

Backend: the initialized world's (the launcher picks NCCL when every rank has a GPU, else
gloo, unless told otherwise). An op's `backend` attribute names the transport the
compiler intended; this runtime posts every collective on the world's backend.

Process groups. `dist.new_group` is collective over the WORLD: every rank must call it,
for every group, in the same order, even ranks that are not members, or the ranks
deadlock. Creating a group lazily when a rank first reaches a collective therefore hangs
(ranks outside the team never get there). So `Communicator.create_groups` is called when a
program is compiled, by every rank, with every team of the program, in sorted order; each
group is created once and cached by its team (the tuple in team order). Groups keep the
team's order (`sort_ranks=False`), so a member's group rank is its position in the team
and "concatenate in team order" is what the collective does natively. torch < 2.12 has no
`sort_ranks` and always sorts: then a team not in ascending order posts its chunks through
lists in group-rank order (`Plan.order`). Roots are world
ranks in the IR and are passed to torch as world ranks (`src=`/`dst=`), which torch
translates for the group. Every rank must compile the same programs in the same order.

Posting. Every collective is posted with `async_op=True` and returns a `Token`; a rank not
in the team never posts (the evaluator binds `DONE`). `Token.wait()` waits for the work
(with NCCL this makes the current CUDA stream wait; the host is not blocked) and then runs
the copies that finish the collective's contract, enqueued on the current stream. A team
of one member needs no process group: the collective is a local copy.

Buffer contracts (shared with the passes; nvFuser's postSingleCommunication). Buffers are
flattened in allocation order and must be dense for that; `None` on a rank outside a
tensor's mesh; "chunks" are team-size equal parts, member i = position i in the team.
- allgather: out = concat over the team of every in.
- allreduce: out = in, then reduced in place.
- reduce_scatter: member i gets the reduction of everyone's chunk i.
- scatter: member i gets chunk i of the root's in.
- gather: the root's out = concat of every member's in; a member without in sends zeros; a
  root without in whose out has one chunk less gets no slot for itself.
- broadcast: every member's out = the root's in (the root copies in -> out if it has out).
- reduce: the root's out = the reduction of every in (a member without in adds the identity).
- send_recv: team [sender, receiver], root = sender: receiver's out = sender's in.
- all_to_all: member j's out chunk i = member i's in chunk j.
- shift (offset k): member p's out = in of the member at position (p + k) mod team size;
  one batched send and receive per member (they meet whatever the order of the posts),
  a local copy when k is a multiple of the team size.
`hir.send`/`hir.recv` post on the world group with the peer's world rank. With NCCL a send
completes only when the peer posts its receive, and a rank's operations run in order: a
program must order them so that they pair up (e.g. in a ring, rank 0 sends first and the
others receive first), as with nvFuser's P2P communications.
"""

from __future__ import annotations

import datetime
import inspect
import math
from collections.abc import Callable, Iterable
from dataclasses import dataclass

import torch
import torch.distributed as dist

from hostir_dialect import hir
from hostir_dialect.fusion import ReduceKind
from hostir_dialect.tensor_type import DYNAMIC, TensorType, tensor_type

from .layouts import flatten_in_allocation_order, logical_shape, torch_dtype

_ALL_GATHER = getattr(dist, "all_gather_single", None) or dist.all_gather_into_tensor
_REDUCE_SCATTER = getattr(dist, "reduce_scatter_single", None) or dist.reduce_scatter_tensor

REDUCE_OPS = {
    ReduceKind.SUM: dist.ReduceOp.SUM, ReduceKind.PROD: dist.ReduceOp.PRODUCT,
    ReduceKind.MAX: dist.ReduceOp.MAX, ReduceKind.MIN: dist.ReduceOp.MIN,
}


class CollectiveError(Exception):
    """A collective cannot run with the buffers it was given."""


class Works:
    """Several posted operations waited for as one (a batch of sends and receives)."""

    __slots__ = ("works",)

    def __init__(self, works: list):
        self.works = works

    def wait(self) -> None:
        for work in self.works:
            work.wait()


class Token:
    """The work handle of a posted collective (`!hir.work`)."""

    __slots__ = ("work", "after")

    def __init__(self, work=None, after: Callable[[], None] | None = None):
        self.work = work
        self.after = after

    def wait(self, member: int | None = None) -> None:
        """Wait for the whole collective (a library collective has no per-member parts)."""
        if self.work is not None:
            self.work.wait()
        if self.after is not None:
            self.after()


DONE = Token()
"""The token of a collective this rank does not take part in, or that was local."""


class Communicator:
    """This rank's view of the world: rank, size, backend, device and the team groups."""

    def __init__(self, rank: int, world_size: int, device: torch.device, timeout: float | None = None):
        self.rank = rank
        self.world_size = world_size
        self.device = device
        self.timeout = datetime.timedelta(seconds=timeout) if timeout else None
        self._groups: dict[tuple[int, ...], dist.ProcessGroup | None] = {}
        self._orders: dict[tuple[int, ...], tuple[int, ...] | None] = {}

    @staticmethod
    def for_current_process(rank: int | None, world_size: int | None, device: torch.device | None) -> Communicator:
        """The communicator of an initialized torch.distributed world, else a single-rank one."""
        if dist.is_available() and dist.is_initialized():
            actual_rank, actual_size = dist.get_rank(), dist.get_world_size()
            if rank not in (None, actual_rank) or world_size not in (None, actual_size):
                raise ValueError(
                    f"rank {rank}/world size {world_size} do not match the initialized process group "
                    f"(rank {actual_rank} of {actual_size})"
                )
            if device is None:
                device = _device_for_backend(dist.get_backend())
            # One communicator per world and device, so each team's group is created once.
            key = (id(dist.group.WORLD), device)
            if key not in _WORLD_COMMUNICATORS:
                _WORLD_COMMUNICATORS[key] = Communicator(actual_rank, actual_size, device)
            return _WORLD_COMMUNICATORS[key]
        rank, world_size = (0 if rank is None else rank), (1 if world_size is None else world_size)
        if world_size < 1:
            raise ValueError(f"world size must be at least 1, got {world_size}")
        if not 0 <= rank < world_size:
            raise ValueError(f"rank {rank} is outside a world of {world_size} ranks")
        return Communicator(rank, world_size, device or torch.device("cpu"))

    @property
    def backend(self) -> str | None:
        return dist.get_backend() if dist.is_available() and dist.is_initialized() else None

    def team_problem(self, team: tuple[int, ...]) -> str | None:
        """Why this world cannot run a collective over `team`, if it cannot."""
        outside = [d for d in team if not 0 <= d < self.world_size]
        if outside:
            return f"team {list(team)} names devices {outside} outside the world of {self.world_size} ranks"
        if len(team) > 1 and self.backend is None:
            return f"team {list(team)} needs torch.distributed; run the program with run_spmd or hostir-run --nproc"
        return None

    def create_groups(self, teams: Iterable[tuple[int, ...]]) -> None:
        """Create the process group of every team not created yet: collective, see module doc."""
        for team in sorted(set(teams)):
            problem = self.team_problem(team)
            if problem:
                raise CollectiveError(problem)
            if len(team) == 1 or team in self._groups:
                continue
            if team == tuple(range(self.world_size)):
                self._groups[team] = dist.group.WORLD
            else:
                self._groups[team], self._orders[team] = _new_group(team, self.timeout)

    def group(self, team: tuple[int, ...]):
        return self._groups.get(team)

    def order(self, team: tuple[int, ...]) -> tuple[int, ...] | None:
        """Team positions by group rank, when the group does not keep the team's order."""
        return self._orders.get(team)

    def poster(self, op: hir.CollectiveOp) -> Callable[..., Token]:
        """The function that posts `op` for this rank (which must be in the op's team),
        called with the values of the op's operands (input and output buffers, then any
        index such as a shift's offset)."""
        plan = Plan.of(self, op)
        return _COLLECTIVES[type(op)](plan)

    def point_to_point(self, op: hir.PointToPointOp) -> Callable[[torch.Tensor, int], Token]:
        perm = tensor_type(op.buffer).value_allocation_order()
        sends = isinstance(op, hir.SendOp)
        rank = self.rank

        def post(buffer: torch.Tensor, peer: int) -> Token:
            if peer == rank or not 0 <= peer < self.world_size:
                raise CollectiveError(f"peer {peer} is not another rank of the world of {self.world_size}")
            flat = flatten_in_allocation_order(buffer, perm, "the")
            flat = flat.view(transfer_dtype(flat.dtype, None))
            return Token(dist.isend(flat, dst=peer) if sends else dist.irecv(flat, src=peer))

        return post


_WORLD_COMMUNICATORS: dict[tuple[int, torch.device], Communicator] = {}


_KEEPS_TEAM_ORDER = "sort_ranks" in inspect.signature(dist.new_group).parameters


def _new_group(team: tuple[int, ...], timeout) -> tuple[dist.ProcessGroup | None, tuple[int, ...] | None]:
    if _KEEPS_TEAM_ORDER:
        return dist.new_group(list(team), timeout=timeout, sort_ranks=False), None
    ranks = sorted(team)
    order = tuple(team.index(d) for d in ranks)
    return dist.new_group(ranks, timeout=timeout), (None if ranks == list(team) else order)


def _device_for_backend(backend: str) -> torch.device:
    if backend == "nccl":
        return torch.device("cuda", torch.cuda.current_device())
    return torch.device("cpu")


# --------------------------------------------------------------------------- #
# One posting function per collective
# --------------------------------------------------------------------------- #


@dataclass(frozen=True)
class Plan:
    """Everything about a collective that is fixed when the program is compiled."""

    team: tuple[int, ...]
    rank: int
    root: int | None
    reduce_op: object
    reduce_kind: ReduceKind | None
    group: dist.ProcessGroup | None
    order: tuple[int, ...] | None
    """Team positions by group rank; None when they coincide (see the module doc)."""
    in_perm: tuple[int, ...] | None
    out_perm: tuple[int, ...] | None
    in_numel: int | None
    out_numel: int | None
    dtype: torch.dtype
    device: torch.device
    copy_on_reduce: bool

    @staticmethod
    def of(comm: Communicator, op: hir.CollectiveOp) -> Plan:
        in_type, out_type = tensor_type(op.input), tensor_type(op.output)
        kind = op.reduction.data if op.reduction is not None else None
        dtype = transfer_dtype(torch_dtype(in_type), kind)
        if comm.backend == "gloo" and dtype in SIGNED_OF_UNSIGNED:
            raise CollectiveError(f"takes the {kind.value if kind else 'values'} of {dtype} values, which gloo does not "
                                  "compare (it moves no unsigned integer wider than a byte); NCCL does")
        team = op.team_of(comm.rank)
        assert team is not None, "only a member posts"
        return Plan(
            team=team, rank=comm.rank, root=op.root_of(comm.rank),
            reduce_op=REDUCE_OPS[kind] if kind else None, reduce_kind=kind,
            group=comm.group(team), order=comm.order(team),
            in_perm=in_type.value_allocation_order(), out_perm=out_type.value_allocation_order(),
            in_numel=_static_numel(in_type, comm.rank), out_numel=_static_numel(out_type, comm.rank),
            dtype=dtype, device=comm.device,
            # gloo may use a non-root's reduce buffer as scratch space; NCCL does not.
            copy_on_reduce=comm.backend != "nccl",
        )

    @property
    def size(self) -> int:
        return len(self.team)

    def by_group_rank(self, chunks: list[torch.Tensor]) -> list[torch.Tensor]:
        """Per-member chunks in team order -> in the group's rank order."""
        return chunks if self.order is None else [chunks[k] for k in self.order]

    @property
    def is_root(self) -> bool:
        return self.rank == self.root

    def flat_in(self, t: torch.Tensor | None) -> torch.Tensor:
        if t is None:
            raise CollectiveError(f"rank {self.rank} is in team {list(self.team)} but holds no input buffer")
        return flatten_in_allocation_order(t, self.in_perm, "input").view(self.dtype)

    def flat_out(self, t: torch.Tensor | None) -> torch.Tensor:
        if t is None:
            raise CollectiveError(f"rank {self.rank} is in team {list(self.team)} but holds no output buffer")
        return flatten_in_allocation_order(t, self.out_perm, "output").view(self.dtype)

    def scratch(self, numel: int | None, fill: float = 0) -> torch.Tensor:
        if numel is None:
            raise CollectiveError("a rank without a buffer needs a static buffer size, but the type is dynamic")
        return torch.full((numel,), fill, dtype=self.dtype, device=self.device)

    def identity(self) -> float:
        if self.reduce_kind == ReduceKind.PROD:
            return 1
        if self.reduce_kind in (ReduceKind.MAX, ReduceKind.MIN):
            info = torch.finfo(self.dtype) if self.dtype.is_floating_point else torch.iinfo(self.dtype)
            return info.min if self.reduce_kind == ReduceKind.MAX else info.max
        return 0


SIGNED_OF_UNSIGNED = {torch.uint16: torch.int16, torch.uint32: torch.int32, torch.uint64: torch.int64}
"""gloo moves no unsigned integers wider than a byte ("Invalid scalar type")."""


def transfer_dtype(dtype: torch.dtype, reduction: ReduceKind | None) -> torch.dtype:
    """The dtype a collective moves `dtype` as: an unsigned integer as the signed one of its
    width, the same bits, where the collective moves or adds them (two's complement adds
    and multiplies as unsigned arithmetic does, mod 2^n); a maximum or minimum compares
    them, so it keeps the unsigned type."""
    if reduction in (ReduceKind.MAX, ReduceKind.MIN):
        return dtype
    return SIGNED_OF_UNSIGNED.get(dtype, dtype)


def _static_numel(t: TensorType, rank: int) -> int | None:
    shape = logical_shape(t, rank)
    if DYNAMIC in shape:
        return None
    return math.prod(shape)


def _check(condition: bool, message: str) -> None:
    if not condition:
        raise CollectiveError(message)


def _chunks(flat: torch.Tensor, parts: int, what: str) -> list[torch.Tensor]:
    _check(flat.numel() % parts == 0, f"{what} has {flat.numel()} elements, not divisible into {parts} team chunks")
    return list(flat.view(parts, -1).unbind(0))


def _copy_chunks(targets: list[torch.Tensor], sources: list[torch.Tensor]) -> None:
    for target, source in zip(targets, sources):
        target.copy_(source)


def _allgather(p: Plan):
    def post(inp, out) -> Token:
        fi, fo = p.flat_in(inp), p.flat_out(out)
        _check(fo.numel() == p.size * fi.numel(),
               f"output has {fo.numel()} elements; allgather needs {p.size} (team size) x {fi.numel()} (input)")
        if p.size == 1:
            fo.copy_(fi)
            return DONE
        if p.order is not None:
            return Token(dist.all_gather(p.by_group_rank(_chunks(fo, p.size, "allgather output")), fi,
                                         group=p.group, async_op=True))
        return Token(_ALL_GATHER(fo, fi, group=p.group, async_op=True))

    return post


def _allreduce(p: Plan):
    def post(inp, out) -> Token:
        fi, fo = p.flat_in(inp), p.flat_out(out)
        _check(fo.numel() == fi.numel(), f"allreduce input has {fi.numel()} elements but output {fo.numel()}")
        if fo.data_ptr() != fi.data_ptr():  # else in place (allreduce-in-place)
            fo.copy_(fi)
        if p.size == 1:
            return DONE
        return Token(dist.all_reduce(fo, op=p.reduce_op, group=p.group, async_op=True))

    return post


def _reduce_scatter(p: Plan):
    def post(inp, out) -> Token:
        fi, fo = p.flat_in(inp), p.flat_out(out)
        _check(fi.numel() == p.size * fo.numel(),
               f"input has {fi.numel()} elements; reduce_scatter needs {p.size} (team size) x {fo.numel()} (output)")
        if p.size == 1:
            fo.copy_(fi)
            return DONE
        if p.order is not None:
            return Token(dist.reduce_scatter(fo, p.by_group_rank(_chunks(fi, p.size, "reduce_scatter input")),
                                             op=p.reduce_op, group=p.group, async_op=True))
        return Token(_REDUCE_SCATTER(fo, fi, op=p.reduce_op, group=p.group, async_op=True))

    return post


def _scatter(p: Plan):
    def post(inp, out) -> Token:
        fo = p.flat_out(out) if out is not None or not p.is_root else p.scratch(p.out_numel)
        if p.is_root:
            chunks = _chunks(p.flat_in(inp), p.size, "scatter input")
            _check(chunks[0].numel() == fo.numel(), f"scatter chunks have {chunks[0].numel()} elements but the output {fo.numel()}")
            if p.size == 1:
                fo.copy_(chunks[0])
                return DONE
            return Token(dist.scatter(fo, p.by_group_rank(chunks), src=p.root, group=p.group, async_op=True))
        return Token(dist.scatter(fo, None, src=p.root, group=p.group, async_op=True))

    return post


def _gather(p: Plan):
    def post(inp, out) -> Token:
        # A member without an input buffer contributes zeros of the chunk size.
        fi = p.flat_in(inp) if inp is not None else p.scratch(p.in_numel)
        if not p.is_root:
            return Token(dist.gather(fi, None, dst=p.root, group=p.group, async_op=True))
        fo = p.flat_out(out) if out is not None else p.scratch(p.size * fi.numel())
        if inp is None and fo.numel() == (p.size - 1) * fi.numel():
            # A root that sends nothing may have no slot for itself (nvFuser's postGather):
            # its own chunk lands in scratch space.
            chunks = _chunks(fo, p.size - 1, "gather output")
            chunks.insert(p.team.index(p.rank), p.scratch(fi.numel()))
        else:
            chunks = _chunks(fo, p.size, "gather output")
        _check(chunks[0].numel() == fi.numel(), f"gather output chunks have {chunks[0].numel()} elements but the input {fi.numel()}")
        if p.size == 1:
            fo.copy_(fi)
            return DONE
        return Token(dist.gather(fi, p.by_group_rank(chunks), dst=p.root, group=p.group, async_op=True))

    return post


def _broadcast(p: Plan):
    def post(inp, out) -> Token:
        if p.is_root:
            if out is None:
                buffer = p.flat_in(inp)
            else:
                buffer = p.flat_out(out)
                fi = p.flat_in(inp)
                _check(fi.numel() == buffer.numel(), f"broadcast input has {fi.numel()} elements but output {buffer.numel()}")
                buffer.copy_(fi)
        else:
            buffer = p.flat_out(out)
        if p.size == 1:
            return DONE
        return Token(dist.broadcast(buffer, src=p.root, group=p.group, async_op=True))

    return post


def _reduce(p: Plan):
    def post(inp, out) -> Token:
        if p.is_root:
            buffer = p.flat_out(out) if out is not None else p.scratch(p.in_numel)
            if inp is None:
                buffer.fill_(p.identity())
            else:
                fi = p.flat_in(inp)
                _check(fi.numel() == buffer.numel(), f"reduce input has {fi.numel()} elements but output {buffer.numel()}")
                buffer.copy_(fi)
        elif inp is None:
            buffer = p.scratch(p.in_numel, p.identity())
        else:
            buffer = p.flat_in(inp)
            if p.copy_on_reduce:
                buffer = buffer.clone()
        if p.size == 1:
            return DONE
        return Token(dist.reduce(buffer, dst=p.root, op=p.reduce_op, group=p.group, async_op=True))

    return post


def _send_recv(p: Plan):
    _check(p.size in (1, 2), f"send_recv needs a team [sender, receiver], got {list(p.team)}")
    sender, receiver = p.team[0], p.team[-1]

    def post(inp, out) -> Token:
        if p.size == 1:
            p.flat_out(out).copy_(p.flat_in(inp))
            return DONE
        if p.rank == sender:
            return Token(dist.isend(p.flat_in(inp), dst=receiver, group=p.group))
        return Token(dist.irecv(p.flat_out(out), src=sender, group=p.group))

    return post


def _all_to_all(p: Plan):
    def post(inp, out) -> Token:
        fi, fo = p.flat_in(inp), p.flat_out(out)
        _check(fi.numel() == fo.numel() and fi.numel() % p.size == 0,
               f"all_to_all needs equal input and output sizes divisible by the team size {p.size}, got {fi.numel()} and {fo.numel()}")
        if p.size == 1:
            fo.copy_(fi)
            return DONE
        if p.order is None:
            return Token(dist.all_to_all_single(fo, fi, group=p.group, async_op=True))
        # Exchange through buffers in group-rank order, then put the chunks back in team order.
        sent = torch.cat(p.by_group_rank(_chunks(fi, p.size, "all_to_all input")))
        received = torch.empty_like(fo)
        work = dist.all_to_all_single(received, sent, group=p.group, async_op=True)
        targets = p.by_group_rank(_chunks(fo, p.size, "all_to_all output"))
        return Token(work, lambda: _copy_chunks(targets, _chunks(received, p.size, "all_to_all output")))

    return post


def _shift(p: Plan):
    position = p.team.index(p.rank)

    def post(inp, out, offset: int) -> Token:
        fi, fo = p.flat_in(inp), p.flat_out(out)
        _check(fi.numel() == fo.numel(), f"shift sends {fi.numel()} elements but receives {fo.numel()}")
        step = offset % p.size
        if step == 0:
            fo.copy_(fi)
            return DONE
        source, dest = p.team[(position + step) % p.size], p.team[(position - step) % p.size]
        return Token(Works(dist.batch_isend_irecv([
            dist.P2POp(dist.isend, fi, dest, p.group), dist.P2POp(dist.irecv, fo, source, p.group),
        ])))

    return post


_COLLECTIVES: dict[type[hir.CollectiveOp], Callable[[Plan], Callable]] = {
    hir.AllgatherOp: _allgather,
    hir.AllreduceOp: _allreduce,
    hir.ReduceScatterOp: _reduce_scatter,
    hir.ScatterOp: _scatter,
    hir.GatherOp: _gather,
    hir.BroadcastOp: _broadcast,
    hir.ReduceOp: _reduce,
    hir.SendRecvOp: _send_recv,
    hir.AllToAllOp: _all_to_all,
    hir.ShiftOp: _shift,
}
