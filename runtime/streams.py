"""Streams of a host program: torch CUDA streams on a GPU, a bookkeeping stand-in on CPU.

Both pools share the logic below and differ only in four primitives (the backend's current
stream, a new stream, recording a mark on a stream, making a stream wait for a mark), so
one compiled program runs on either and the CPU pool tests the logic:

- `current()`, `set_current(s)`: the program's current stream. Setting it costs no torch
  call: torch's current stream follows only when device work is next enqueued
  (`activate()`, called by every step that enqueues some), so a stream that is made
  current only to wait for another (`hir.set_current_stream %user; hir.synchronize %w`)
  never becomes torch's current stream.
- `get(key)`: the worker stream of an integer key, created on first use and cached for the
  pool's lifetime, i.e. across runs. On a GPU it is hostir's stream of that role for the
  whole process (`role_stream`): distinct from every other stream hostir uses.
- `synchronize(s)`: the current stream waits for the work enqueued on `s` so far, never
  blocking the host. A mark (a CUDA event, one per stream, re-recorded) is recorded on `s`
  only when `s` may have received work since its last mark: a stream receives work only
  while it is current, so its mark stays valid until it becomes current again. A stream
  never waits for itself.
- `begin_run()` / `end_run()`: a run starts on the backend's current stream and leaves it
  current again; marks do not outlive a run (work outside the program may follow it).
- `hazards`: on CPU ranks, an optional `runtime.hazards.Hazards` that follows every mark
  and wait, so that work the program does not order shows as an error (CPU work itself
  runs in program order and would never show it).
- `capturing()`: while a CUDA graph is captured, every stream the program makes current
  first waits for the capture's stream (so its work is part of the capture, whatever the
  program's own ordering) and the capture's stream waits for all of them at the end (a
  capture must end joined).
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

import torch

from .hazards import Clock, Hazards


class _Streams:
    hazards: Hazards | None = None

    def __init__(self) -> None:
        self._by_key: dict[int, Any] = {}
        self._start = self._current = self._active = self._backend_current()
        self._marks: dict[int, Any] = {}
        self._capture_origin: Any = None
        self._forked: dict[int, Any] = {}

    # -- the backend's primitives ------------------------------------------------
    def _backend_current(self) -> Any:
        raise NotImplementedError

    def _new_stream(self, key: int) -> Any:
        raise NotImplementedError

    def _record(self, stream: Any) -> Any:
        """A mark on `stream` after the work enqueued on it so far."""
        raise NotImplementedError

    def _wait(self, waiter: Any, mark: Any) -> None:
        raise NotImplementedError

    def _make_active(self, stream: Any) -> None:
        raise NotImplementedError

    def stream_id(self, stream: Any) -> int:
        raise NotImplementedError

    # -- the program's view ------------------------------------------------------
    def begin_run(self) -> None:
        self._start = self._current = self._active = self._backend_current()
        self._marks.clear()
        if self.hazards is not None:
            self.hazards.begin_run()

    def end_run(self) -> None:
        self._current = self._start
        self.activate()

    def current(self) -> Any:
        return self._current

    def current_id(self) -> int:
        return self.stream_id(self._current)

    @property
    def active(self) -> Any:
        """The stream device work is enqueued on (torch's current stream, as set by the pool)."""
        return self._active

    def get(self, key: int) -> Any:
        stream = self._by_key.get(key)
        if stream is None:
            stream = self._by_key[key] = self._new_stream(key)
        return stream

    def set_current(self, stream: Any) -> None:
        self._current = stream
        handle = self.stream_id(stream)
        self._marks.pop(handle, None)
        if self._capture_origin is not None and handle not in self._forked:
            self._forked[handle] = stream
            self._wait(stream, self._record(self._capture_origin))

    def activate(self) -> None:
        """Make the current stream torch's, before device work is enqueued."""
        if self._active is not self._current:
            self._make_active(self._current)
            self._active = self._current

    def synchronize(self, stream: Any) -> None:
        handle = self.stream_id(stream)
        if handle == self.stream_id(self._current):
            return
        mark = self._marks.get(handle)
        if mark is None:
            mark = self._marks[handle] = self._record(stream)
        self._wait(self._current, mark)

    @contextmanager
    def capturing(self) -> Iterator[None]:
        """Fork every stream the program uses from the capture's stream, join them at the end."""
        origin = self._backend_current()
        self._capture_origin, self._forked = origin, {self.stream_id(origin): origin}
        try:
            yield
        finally:
            for handle, stream in self._forked.items():
                if handle != self.stream_id(origin):
                    self._wait(origin, self._record(stream))
            self._capture_origin, self._forked = None, {}

    @property
    def keys(self) -> list[int]:
        return sorted(self._by_key)


@dataclass(eq=False)
class CpuStream:
    """Stand-in for a CUDA stream: CPU work is synchronous, so only identity matters."""

    key: int | None
    id: int
    waited_for: list[int] = field(default_factory=list)
    """Ids of the streams this one was made to wait for (hir.synchronize), in order."""

    def __repr__(self) -> str:
        return f"CpuStream(key={self.key}, id={self.id})"


@dataclass(frozen=True)
class CpuMark:
    """A point of a CPU stream's work: the stream, and its vector clock when hazards are checked."""

    stream: int
    clock: Clock | None


class CpuStreams(_Streams):
    def __init__(self, hazards: Hazards | None = None) -> None:
        self.hazards = hazards
        if hazards is not None:
            hazards.current_stream = self.current_id
        self.default = CpuStream(None, 0)
        self.records: list[int] = []
        """Ids of the streams a mark was recorded on, in order (a CUDA event record each)."""
        super().__init__()

    def _backend_current(self) -> CpuStream:
        return self.default

    def _new_stream(self, key: int) -> CpuStream:
        return CpuStream(key, len(self._by_key) + 1)

    def _record(self, stream: CpuStream) -> CpuMark:
        self.records.append(stream.id)
        return CpuMark(stream.id, self.hazards.mark(stream.id) if self.hazards is not None else None)

    def _wait(self, waiter: CpuStream, mark: CpuMark) -> None:
        waiter.waited_for.append(mark.stream)
        if self.hazards is not None:
            self.hazards.join(waiter.id, mark.clock)

    def _make_active(self, stream: CpuStream) -> None:
        pass

    def begin_run(self) -> None:
        super().begin_run()
        # What a run records is dropped at the next: a program run many times holds no
        # more than one run's worth.
        self.records.clear()
        for stream in (self.default, *self._by_key.values()):
            stream.waited_for.clear()

    def stream_id(self, stream: CpuStream) -> int:
        return stream.id


class CudaStreams(_Streams):
    def __init__(self, device: torch.device) -> None:
        self.device = device
        self._events: dict[int, torch.cuda.Event] = {}
        super().__init__()

    def _backend_current(self) -> torch.cuda.Stream:
        return torch.cuda.current_stream(self.device)

    def _new_stream(self, key: int) -> torch.cuda.Stream:
        return role_stream(self.device, ("worker", key))

    def _record(self, stream: torch.cuda.Stream) -> torch.cuda.Event:
        # One event per stream, re-recorded: a wait uses the record that precedes it.
        event = self._events.get(stream.cuda_stream)
        if event is None:
            event = self._events[stream.cuda_stream] = torch.cuda.Event()
        event.record(stream)
        return event

    def _wait(self, waiter: torch.cuda.Stream, mark: torch.cuda.Event) -> None:
        waiter.wait_event(mark)

    def _make_active(self, stream: torch.cuda.Stream) -> None:
        torch.cuda.set_stream(stream)

    def stream_id(self, stream: torch.cuda.Stream) -> int:
        return stream.cuda_stream


POOL_SIZE = 32
"""Streams in each of torch's per-priority stream pools (c10's kStreamsPerPool)."""

_ROLE_STREAMS: dict[tuple[int | None, int], dict[Hashable, torch.cuda.Stream]] = {}
"""hostir's CUDA streams, by device and priority, then by role."""


def role_stream(device: torch.device, role: Hashable, priority: int = 0) -> torch.cuda.Stream:
    """hostir's CUDA stream for `role` (a worker key, a copy-engine phase and lane) on
    `device`, the same for every program of the process, and distinct from the stream of
    every other role and from the stream current when it is first asked for.

    torch hands out its pool's 32 streams per priority in turn to every caller, so two
    streams asked for apart may be one CUDA stream: a copy-engine phase could then get a
    worker's stream and its reduce wait behind that worker's GEMMs. Programs share roles'
    streams: their runs are ordered on the stream each begins and ends on (two programs
    run at once from two user streams would serialize on them)."""
    held = _ROLE_STREAMS.setdefault((device.index, priority), {})
    stream = held.get(role)
    if stream is None:
        taken = {s.cuda_stream for s in held.values()} | {torch.cuda.current_stream(device).cuda_stream}
        stream = held[role] = distinct_draw(lambda: torch.cuda.Stream(device=device, priority=priority),
                                            lambda s: s.cuda_stream in taken)
    return stream


def distinct_draw(draw: Callable[[], Any], taken: Callable[[Any], bool]) -> Any:
    """The first stream `draw` gives that is not `taken`, within one turn of the pool;
    where every stream of the pool is taken, the last drawn (shared)."""
    for _ in range(POOL_SIZE):
        stream = draw()
        if not taken(stream):
            return stream
    return stream


def make_streams(device: torch.device, hazards: Hazards | None = None) -> CpuStreams | CudaStreams:
    """The pool of a device; `hazards` (CPU only) checks the order of the work."""
    if device.type == "cuda":
        if hazards is not None:
            raise ValueError("the stream hazard check runs on CPU ranks (on a GPU the streams really run concurrently)")
        return CudaStreams(device)
    return CpuStreams(hazards)
