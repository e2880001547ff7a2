"""Streams of a host program: torch CUDA streams on a GPU, a bookkeeping stand-in on CPU.

Both pools have the same interface, so one compiled program runs on either:
`current()`, `get(key)` (the worker stream of an integer key, created on first use and
cached for the pool's lifetime, i.e. across runs), `set_current(s)`, `synchronize(s)`
(the current stream waits for `s`: an event recorded on `s` and waited on by the current
stream, never blocking the host), `stream_id(s)` (a stable integer, for debug logs) and
`start_run()` (called by the evaluator before each run: what a pool records about one run
is dropped, so a program run many times holds no more than one run's worth).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import torch


@dataclass(eq=False)
class CpuStream:
    """Stand-in for a CUDA stream: CPU work is synchronous, so only identity matters."""

    key: int | None
    id: int
    waited_for: list[int] = field(default_factory=list)
    """Ids of the streams this one was made to wait for (hir.synchronize) in the current
    run, in order."""

    def __repr__(self) -> str:
        return f"CpuStream(key={self.key}, id={self.id})"


class CpuStreams:
    def __init__(self) -> None:
        self.default = CpuStream(None, 0)
        self._current = self.default
        self._by_key: dict[int, CpuStream] = {}

    def current(self) -> CpuStream:
        return self._current

    def get(self, key: int) -> CpuStream:
        stream = self._by_key.get(key)
        if stream is None:
            stream = self._by_key[key] = CpuStream(key, len(self._by_key) + 1)
        return stream

    def set_current(self, stream: CpuStream) -> None:
        self._current = stream

    def synchronize(self, stream: CpuStream) -> None:
        self._current.waited_for.append(stream.id)

    def start_run(self) -> None:
        for stream in (self.default, *self._by_key.values()):
            stream.waited_for.clear()

    def stream_id(self, stream: CpuStream) -> int:
        return stream.id

    @property
    def keys(self) -> list[int]:
        return sorted(self._by_key)


class CudaStreams:
    def __init__(self, device: torch.device) -> None:
        self.device = device
        self._by_key: dict[int, torch.cuda.Stream] = {}

    def current(self) -> torch.cuda.Stream:
        return torch.cuda.current_stream(self.device)

    def get(self, key: int) -> torch.cuda.Stream:
        stream = self._by_key.get(key)
        if stream is None:
            stream = self._by_key[key] = torch.cuda.Stream(device=self.device)
        return stream

    def set_current(self, stream: torch.cuda.Stream) -> None:
        torch.cuda.set_stream(stream)

    def synchronize(self, stream: torch.cuda.Stream) -> None:
        # wait_stream = record an event on `stream` + cudaStreamWaitEvent on the current one.
        torch.cuda.current_stream(self.device).wait_stream(stream)

    def start_run(self) -> None:
        pass  # nothing is recorded: the events live in CUDA's own streams

    def stream_id(self, stream: torch.cuda.Stream) -> int:
        return stream.cuda_stream

    @property
    def keys(self) -> list[int]:
        return sorted(self._by_key)


def make_streams(device: torch.device) -> CpuStreams | CudaStreams:
    return CudaStreams(device) if device.type == "cuda" else CpuStreams()
