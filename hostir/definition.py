"""`hostir.FusionDefinition`: the IR frontend's `hostir_dialect.FusionDefinition` plus
`lower()` (the `hostir-lower` pipeline of `passes`) and `execute()` (lower, then run on
this rank with `runtime`). This package is the one layer above all three: the dialect
imports neither the passes nor the runtime, and the passes do not import the runtime
(docs/architecture.md).
"""

from __future__ import annotations

import os
from collections.abc import Sequence

from xdsl.dialects.builtin import ModuleOp

from hostir import passes, runtime
from hostir_dialect import FusionDefinition as FusionDefinitionIR


class FusionDefinition(FusionDefinitionIR):
    """nvFuser's `FusionDefinition`: define the fusion and its schedule (see
    `hostir_dialect.frontend`), then `lower()` or `execute()` it."""

    def __init__(self, name: str = "fusion"):
        super().__init__(name)
        self._executors = runtime.ExecutorCache()
        self._lowered: dict[str, tuple[tuple[int, str], ModuleOp]] = {}

    def lower(self, options: passes.PassManagerOptions | None = None, *, pipeline: str = "hostir-lower") -> ModuleOp:
        """The host program: this fusion through `pipeline` (default `hostir-lower`, which
        lets the cost model choose transports and pipelining; e.g.
        `"hostir-lower{transport=nccl}"` keeps NCCL and every Stream pipeline as written).
        `options` disable passes, dump IR after passes, time them."""
        return passes.lower(self.to_module(), options, pipeline)

    def execute(self, inputs: Sequence[object], *, pipeline: str = "hostir-lower",
                trace: str | os.PathLike | None = None, **options) -> list:
        """Lower with `pipeline`, then run on this rank (`rank=`, `world_size=`,
        `number_of_streams=`, `cuda_graph=`, `unit_backend=`, `trace=PATH`, ... as
        `runtime.execute`): local shards in, local shards out. On GPUs it replays from a
        CUDA graph and runs kernel units as fused kernels unless told otherwise. For
        several ranks at once use `runtime.run_spmd(fd, per_rank_inputs, world_size=N,
        lower=True)`.

        As nvFuser's FusionExecutorCache, the lowered program and its compiled evaluator
        are kept, by the definition's revision (any definition or scheduling call makes a
        new one), the pipeline and the options: calling again with the same ones only
        runs it."""
        evaluator = self._executors.evaluator((self._version(), pipeline), lambda: self._lowered_program(pipeline),
                                              trace=trace is not None, **options)
        return runtime.executor_cache.run_and_trace(evaluator, list(inputs), trace)

    def _version(self) -> tuple[int, str]:
        return self.revision, self.name

    def _lowered_program(self, pipeline: str) -> ModuleOp:
        """The program of this version lowered by `pipeline`, once for all option sets."""
        lowered = self._lowered.get(pipeline)
        if lowered is None or lowered[0] != self._version():
            lowered = self._lowered[pipeline] = (self._version(), self.lower(pipeline=pipeline))
        return lowered[1]
