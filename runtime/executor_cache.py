"""Host programs lowered and compiled once, then run many times (nvFuser's
FusionExecutorCache).

Lowering a small fusion and compiling its host program cost tens of milliseconds;
running it costs about one. `ExecutorCache` keeps compiled evaluators by everything that
changes them: the program (a key the caller chooses, such as the program's text or a
FusionDefinition's revision), the evaluator's options (function name, rank, world size,
number of streams, device, ...) and the torch.distributed world it was compiled in (its
process groups belong to that world). It holds at most `capacity` entries and drops the
least recently used one first, so running programs over and over grows nothing.

Compiling a program creates the process groups of its teams, which is collective: every
rank must compile the same programs in the same order (runtime/communicator.py). Ranks
that make the same calls, as SPMD ranks do, make keys that differ only by the rank, so
they all hit and miss alike and this stays true.
"""

from __future__ import annotations

import os
from collections import OrderedDict
from collections.abc import Callable, Hashable, Sequence
from typing import Any, Generic, TypeVar

import torch
import torch.distributed as dist
from xdsl.dialects.builtin import ModuleOp

from .compile import DEFAULT_NUMBER_OF_STREAMS
from .evaluator import Evaluator, check_module, checked_device
from .trace import traced_run

V = TypeVar("V")


class LruCache(Generic[V]):
    """At most `capacity` values by key, the least recently used dropped first."""

    def __init__(self, capacity: int):
        self.capacity = capacity
        self._values: OrderedDict[Hashable, V] = OrderedDict()
        self.misses = 0
        """How many values were built (a test can see that a second call built none)."""

    def get(self, key: Hashable, build: Callable[[], V]) -> V:
        value = self._values.get(key)
        if value is not None:
            self._values.move_to_end(key)
            return value
        value = build()
        self.misses += 1
        self._values[key] = value
        if len(self._values) > self.capacity:
            self._values.popitem(last=False)
        return value

    def __len__(self) -> int:
        return len(self._values)

    def values(self) -> list[V]:
        """The values kept, the least recently used first."""
        return list(self._values.values())


class ExecutorCache:
    """Compiled evaluators by program, options and torch.distributed world."""

    def __init__(self, capacity: int = 16):
        self.evaluators: LruCache[Evaluator] = LruCache(capacity)

    def evaluator(self, program: Hashable, build: Callable[[], ModuleOp], **options) -> Evaluator:
        """The evaluator of the module `build()` returns for `program`, compiled with
        `options` (those of `Evaluator`) on a miss."""
        key = (program, _options_key(options), current_world())
        return self.evaluators.get(key, lambda: Evaluator(build(), **options))


def current_world() -> object:
    """The initialized torch.distributed world (its group object), or None."""
    return dist.group.WORLD if dist.is_available() and dist.is_initialized() else None


def device_of_inputs(inputs: Sequence[Any], device: torch.device | str | None) -> torch.device | str | None:
    """`device`, or where no torch.distributed world chooses one (outside torchrun), the
    device of the tensor inputs when they share one: CUDA tensors passed to a
    single-process run run it on their GPU, as nvFuser's `execute` does, not on the CPU."""
    if device is not None or current_world() is not None:
        return device
    devices = {x.device for x in inputs if isinstance(x, torch.Tensor)}
    return devices.pop() if len(devices) == 1 else None


def _options_key(options: dict) -> tuple:
    device = options.get("device")
    if device is not None:
        options = {**options, "device": checked_device(device)}
    return tuple(sorted(options.items()))


_EXECUTORS = ExecutorCache(capacity=32)
"""What `execute` compiled, by program text."""


def execute(module: ModuleOp, inputs: Sequence[Any], *, name: str | None = None, rank: int | None = None,
            world_size: int | None = None, number_of_streams: int = DEFAULT_NUMBER_OF_STREAMS,
            device: torch.device | str | None = None, cuda_graph: bool | None = None,
            unit_backend: str | None = None, trace: str | os.PathLike | None = None) -> list:
    """Run a host program on this rank: the list of its local outputs. It is compiled
    once per program text and options (a CUDA-graph evaluator keeps its graphs); calling
    again with the same ones only runs it. `trace`: write this rank's Chrome/Perfetto
    trace of the run there (runtime/trace.py)."""
    check_module(module)
    device = device_of_inputs(inputs, device)
    evaluator = _EXECUTORS.evaluator(str(module), module.clone, name=name, rank=rank, world_size=world_size,
                                     number_of_streams=number_of_streams, device=device, cuda_graph=cuda_graph,
                                     unit_backend=unit_backend, trace=trace is not None)
    return run_and_trace(evaluator, inputs, trace)


def run_and_trace(evaluator: Evaluator, inputs: Sequence[Any], trace: str | os.PathLike | None) -> list:
    """Run once; with `trace` (the evaluator must have been built with `trace=True`), also
    write this rank's Chrome/Perfetto trace of the run there."""
    if trace is None:
        return evaluator.run(inputs)
    outputs, traced = traced_run(evaluator, inputs)
    traced.save(trace)
    return outputs
