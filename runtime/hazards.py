"""Stream hazards: a happens-before check of one rank's device work, for CPU ranks.

On a GPU, the work a host program enqueues on different streams (worker streams, the
copy engines' communication stream, NCCL's stream) runs concurrently unless the program
orders it: `hir.synchronize`, waiting for a collective, a flag set by a peer. On CPU
ranks the same program runs in program order, so a missing order never shows as a wrong
number there. This checker makes it show as an error instead, whatever the timing: it
keeps a vector clock per stream (each stream's own count of work items, and how far it
has waited for every other stream), records which memory each piece of device work
reads and writes, and raises `StreamHazard`, naming both ops, when two accesses of the
same elements (at least one a write) are not ordered by the program.

What it models, as the GPU runs it:
- a compute op or a kernel unit reads its operands and writes its result on the current
  stream; `hir.synchronize` / a stream's mark and wait order streams;
- a collective (NCCL's or gloo's) reads its input and writes its output on a stream of
  its own that starts after the posting stream's work so far; waiting for it orders the
  waiting stream after it;
- a copy-engine collective pushes on the communication stream (reading its input there),
  fills its own slot on the posting stream, and a waited peer's push wrote into this
  rank's symmetric buffer after this rank last released the buffer (the peer waited for
  that release) and before the wait; this rank's pushes into the peers' instances must
  come after this rank acquired the buffer in the run (which waited for the peers'
  releases from their previous run);
- `hir.deallocate` hands the memory back to the allocator of the freeing stream, which
  reuses it for that stream's next allocation: every access must be ordered before it
  (a symmetric buffer's release lets the peers write it: the same rule).

It is switched on per evaluator (`Evaluator(check_hazards=True)`, or the environment
variable HOSTIR_CHECK_HAZARDS=1 for every evaluator of a process, which the differential
tests set) and costs a few microseconds per op and a pass over each accessed tensor's
elements where two accesses of one buffer overlap in range: it is for tests, not for
timed runs.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from itertools import count

import torch
from xdsl.ir import Operation

from hostir_dialect.diagnostics import location_of

ENVIRONMENT = "HOSTIR_CHECK_HAZARDS"

Clock = dict[object, int]
"""A vector clock: stream -> how many of its work items are ordered before this point."""


def enabled_by_environment() -> bool:
    return os.environ.get(ENVIRONMENT, "") not in ("", "0")


class StreamHazard(RuntimeError):
    """Two pieces of device work touch the same memory without the program ordering them."""


@dataclass(frozen=True)
class Region:
    """The elements of a tensor, as byte offsets into its storage."""

    storage: torch.UntypedStorage
    start: int
    stop: int
    tensor: torch.Tensor

    @staticmethod
    def of(tensor: torch.Tensor) -> Region:
        size = tensor.element_size()
        if tensor.numel() == 0:
            return Region(tensor.untyped_storage(), 0, 0, tensor)
        first = tensor.storage_offset()
        last = first + sum((n - 1) * s for n, s in zip(tensor.shape, tensor.stride()) if n > 0)
        return Region(tensor.untyped_storage(), int(first) * size, (int(last) + 1) * size, tensor)

    @property
    def key(self) -> tuple[str, int]:
        return str(self.storage.device), self.storage.data_ptr()

    def overlaps(self, other: Region) -> bool:
        if self.start >= other.stop or other.start >= self.stop:
            return False
        if self._dense() and other._dense():
            return True
        return bool(torch.isin(self._bytes(), other._bytes()).any())

    def _dense(self) -> bool:
        return self.tensor.is_contiguous() or self.stop - self.start == self.tensor.numel() * self.tensor.element_size()

    def _bytes(self) -> torch.Tensor:
        """Every byte offset of the tensor's elements (only where two ranges overlap)."""
        t, size = self.tensor, self.tensor.element_size()
        positions = torch.arange(self.stop // size + 1).as_strided(t.shape, t.stride(), t.storage_offset())
        return (positions.reshape(-1, 1) * size + torch.arange(size)).reshape(-1)


@dataclass(frozen=True)
class _Access:
    stream: object
    epoch: int
    """The stream's own count at the access: ordered before any point whose clock has reached it."""
    writes: bool
    region: Region
    op: Operation | None
    what: str


class Hazards:
    """The happens-before state of one rank's run (see the module docstring)."""

    def __init__(self) -> None:
        self.current_stream: Callable[[], object] = lambda: 0
        """The stream work is enqueued on now (the evaluator's stream pool sets it)."""
        self._clocks: dict[object, Clock] = {}
        self._accesses: dict[tuple[str, int], list[_Access]] = {}
        self._released: dict[tuple[str, int], Clock] = {}
        self._epochs: dict[tuple[str, int], Clock] = {}
        self._acquired: dict[tuple[str, int], tuple[object, int]] = {}
        """Symmetric buffer -> the stream that acquired it in this run, and its count then."""
        self._names = count(1)

    def begin_run(self) -> None:
        """A run starts after everything before it (the caller waited for its outputs)."""
        self._clocks.clear()
        self._accesses.clear()
        self._released.clear()
        self._epochs.clear()
        self._acquired.clear()

    # -- streams -------------------------------------------------------------------
    def new_stream(self, what: str, after: Clock | None = None) -> object:
        """A stream of its own (a collective's, a peer's push), ordered after `after`."""
        stream = _VirtualStream(what, next(self._names))
        self._clocks[stream] = dict(after or {})
        return stream

    def mark(self, stream: object) -> Clock:
        """The point reached by `stream`'s work so far."""
        return dict(self._clock(stream))

    def join(self, stream: object, mark: Clock | None) -> None:
        """`stream` waits for the point `mark`."""
        if mark is None:
            return
        clock = self._clock(stream)
        for other, reached in mark.items():
            if clock.get(other, 0) < reached:
                clock[other] = reached

    def _clock(self, stream: object) -> Clock:
        clock = self._clocks.get(stream)
        if clock is None:
            clock = self._clocks[stream] = {}
        return clock

    def _ordered_before(self, access: _Access, clock: Clock) -> bool:
        return clock.get(access.stream, 0) >= access.epoch

    # -- accesses ------------------------------------------------------------------
    def touch(self, op: Operation | None, reads: Iterable[object] = (), writes: Iterable[object] = ()) -> None:
        """`op`'s work on the current stream reads `reads` and writes `writes`."""
        self.access(self.current_stream(), op, reads, writes)

    def access(self, stream: object, op: Operation | None, reads: Iterable[object] = (),
               writes: Iterable[object] = (), what: str = "") -> None:
        """`op`'s work on `stream` reads `reads` and writes `writes` (tensors; others ignored)."""
        clock = self._clock(stream)
        epoch = clock[stream] = clock.get(stream, 0) + 1
        for tensors, is_write in ((reads, False), (writes, True)):
            for tensor in tensors:
                if isinstance(tensor, torch.Tensor):
                    self._check_and_record(_Access(stream, epoch, is_write, Region.of(tensor), op, what), clock)

    def _check_and_record(self, new: _Access, clock: Clock) -> None:
        records = self._accesses.setdefault(new.region.key, [])
        for old in records:
            if (old.writes or new.writes) and old.stream != new.stream and not self._ordered_before(old, clock) \
                    and old.region.overlaps(new.region):
                raise StreamHazard(_conflict(old, new))
        records.append(new)

    def free(self, stream: object, op: Operation | None, tensor: object) -> None:
        """`op` hands `tensor`'s memory back to the allocator on `stream`, which gives it
        to that stream's next allocation: every access of it must be ordered before (and
        none of them can conflict with the memory's next use)."""
        if isinstance(tensor, torch.Tensor) and _owns_its_storage(tensor):  # a view returns no memory
            self._check_ordered_before(stream, op, tensor, "frees")
            self._accesses.pop(Region.of(tensor).key, None)

    def _check_ordered_before(self, stream: object, op: Operation | None, tensor: torch.Tensor, what: str) -> None:
        clock = self._clock(stream)
        for old in self._accesses.get(Region.of(tensor).key, []):
            if not self._ordered_before(old, clock):
                raise StreamHazard(f"stream hazard: {_where(op)} {what} a buffer on {_stream(stream)} while "
                                   f"{_described(old)} may still {'write' if old.writes else 'read'} it on "
                                   f"{_stream(old.stream)}: nothing orders that work before")

    # -- symmetric buffers ---------------------------------------------------------
    def release(self, stream: object, op: Operation | None, tensor: torch.Tensor) -> None:
        """This rank lets the peers write `tensor` (its symmetric instance) again."""
        self._check_ordered_before(stream, op, tensor, "releases to the peers")
        self._released[Region.of(tensor).key] = self.mark(stream)

    def acquire(self, stream: object, tensor: torch.Tensor) -> None:
        """This rank acquired its instance `tensor` on `stream` (after the peers released
        theirs), and the peers acquired it in step with this rank: their writes into it from
        now on come after this rank's last release of it."""
        key = Region.of(tensor).key
        self._epochs[key] = self._released.get(key, {})
        clock = self._clock(stream)
        clock[stream] = clock.get(stream, 0) + 1
        self._acquired[key] = (stream, clock[stream])

    def push(self, stream: object, op: Operation | None, tensor: torch.Tensor) -> None:
        """`op`'s work on `stream` writes into the peers' instances of the symmetric buffer
        whose instance on this rank is `tensor`: only after this rank acquired it in this
        run, which waited until the peers were done with it (their previous run)."""
        acquired = self._acquired.get(Region.of(tensor).key)
        if acquired is None or self._clock(stream).get(acquired[0], 0) < acquired[1]:
            where = "without acquiring it in this run" if acquired is None else \
                f"before its acquisition on {_stream(acquired[0])}"
            raise StreamHazard(f"stream hazard: {_where(op)} pushes into the peers' instances of a symmetric "
                               f"buffer on {_stream(stream)} {where}: a peer may still read it from its previous run")

    def remote_write(self, stream: object, op: Operation | None, region: torch.Tensor, peer: int) -> None:
        """A waited peer's push wrote `region` of this rank's symmetric instance, after this
        rank's last release of it; `stream` (the waiting one) is ordered after the write."""
        since = self._epochs.get(Region.of(region).key, {})
        remote = self.new_stream(f"the push of the member at position {peer}", since)
        self.access(remote, op, writes=[region], what=f"the push of the member at position {peer}")
        self.join(stream, self.mark(remote))


def _owns_its_storage(tensor: torch.Tensor) -> bool:
    """Does `tensor` span its whole storage (as an allocation does, unlike a view of part)?"""
    return tensor.storage_offset() == 0 and tensor.numel() * tensor.element_size() == tensor.untyped_storage().nbytes()


def _where(op: Operation | None) -> str:
    if op is None:
        return "the runtime"
    where = location_of(op)
    return f"'{op.name}'" + (f" at {where}" if where else "")


def _described(access: _Access) -> str:
    return f"{access.what or 'its work'} of {_where(access.op)}" if access.what else _where(access.op)


@dataclass(frozen=True)
class _VirtualStream:
    """Work that runs beside the program's streams: a collective's, a peer's push, the
    copy engines'."""

    what: str
    number: int

    def __str__(self) -> str:
        return self.what


def _stream(stream: object) -> str:
    return str(stream) if isinstance(stream, _VirtualStream) else f"stream {stream}"


def _conflict(old: _Access, new: _Access) -> str:
    verb = {True: "writes", False: "reads"}
    return (f"stream hazard: {_described(new)} {verb[new.writes]} memory on {_stream(new.stream)} that "
            f"{_described(old)} {verb[old.writes]} on {_stream(old.stream)}, and nothing orders the two")


class _OrderedWork:
    """A posted collective's work: waiting for it also orders the waiting stream after
    the collective's own stream."""

    __slots__ = ("_work", "_hazards", "_done")

    def __init__(self, work: object, hazards: Hazards, done: Clock):
        self._work, self._hazards, self._done = work, hazards, done

    def wait(self, *member: object) -> None:
        self._work.wait(*member)  # type: ignore[attr-defined]  # a communicator's work token
        self._hazards.join(self._hazards.current_stream(), self._done)


def on_own_stream(hazards: Hazards, op: Operation, post: Callable[..., object], reads: Iterable[int],
                  writes: Iterable[int]) -> Callable[..., object]:
    """`post` (a communicator's poster), checked as work on a stream of its own that starts
    after the posting stream's work so far: it reads its arguments at positions `reads`
    and writes those at `writes`, and waiting for it joins that stream."""
    reads, writes = tuple(reads), tuple(writes)

    def checked(*args: object) -> object:
        stream = hazards.new_stream(f"the stream of {_where(op)}", hazards.mark(hazards.current_stream()))
        hazards.access(stream, op, [args[i] for i in reads], [args[i] for i in writes], what="the transfer")
        return _OrderedWork(post(*args), hazards, hazards.mark(stream))

    return checked
