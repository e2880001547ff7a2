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
from hostir.profiler import PythonProfiler
from hostir.runtime.trace import traced_run
from hostir_dialect import FusionDefinition as FusionDefinitionIR
from hostir_dialect import TensorType, symbols

NO_EFFECT_OPTIONS = frozenset(("host_ir_lowering", "infer_contiguity", "resize_scheduler"))
"""nvFuser options its multi-device tests pass to `execute` that change how nvFuser
schedules, not what it computes: hostir always lowers to a host program, lays inputs out
itself and has no resize scheduler."""


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
                trace: str | os.PathLike | None = None, _enable_options: Sequence[str] = (),
                _disable_options: Sequence[str] = (), **options) -> list:
        """Lower with `pipeline`, then run on this rank (`rank=`, `world_size=`,
        `number_of_streams=`, `cuda_graph=`, `unit_backend=`, `trace=PATH`, ... as
        `runtime.execute`): local shards in, local shards out; outside a torch.distributed
        world it runs where its tensor inputs are (CUDA tensors: their GPU). On GPUs it replays from a
        CUDA graph and runs kernel units as fused kernels unless told otherwise. Started by
        torchrun, a process joins its world on the first call (without `rank`). For
        several ranks at once use `runtime.run_spmd(fd, per_rank_inputs, world_size=N,
        lower=True)`. `_enable_options`/`_disable_options` take nvFuser's options that
        change how nvFuser schedules, not what it computes (NO_EFFECT_OPTIONS).

        As nvFuser's FusionExecutorCache, the lowered program and its compiled evaluator
        are kept, by the definition's revision (any definition or scheduling call makes a
        new one), the pipeline and the options: calling again with the same ones only
        runs it."""
        for name in (*_enable_options, *_disable_options):
            if name not in NO_EFFECT_OPTIONS:
                known = ", ".join(sorted(NO_EFFECT_OPTIONS))
                raise ValueError(f"nvFuser option {name!r} has no meaning in hostir; it takes {known}")
        if options.get("rank") is None:
            runtime.join_torchrun_world()
        options["device"] = runtime.executor_cache.device_of_inputs(inputs, options.get("device"))
        profiler = PythonProfiler.active
        traced = trace is not None or profiler is not None
        evaluator = self._executors.evaluator((self._version(), pipeline), lambda: self._lowered_program(pipeline),
                                              trace=traced, **options)
        if profiler is None:
            return runtime.executor_cache.run_and_trace(evaluator, list(inputs), trace)
        outputs, ran = traced_run(evaluator, list(inputs))
        profiler.record(ran)
        if trace is not None:
            ran.save(trace)
        return outputs

    def output_types(self, pipeline: str = "hostir-lower") -> list[TensorType]:
        """The outputs' types as `pipeline` lowers them: the mesh and sharding of what
        `execute` returns."""
        (program,) = symbols.programs(self._lowered_program(pipeline))
        return [t for t in program.function_type.outputs.data if isinstance(t, TensorType)]  # a program returns tensors

    def _version(self) -> tuple[int, str]:
        return self.revision, self.name

    def _lowered_program(self, pipeline: str) -> ModuleOp:
        """The program of this version lowered by `pipeline`, once for all option sets."""
        lowered = self._lowered.get(pipeline)
        if lowered is None or lowered[0] != self._version():
            lowered = self._lowered[pipeline] = (self._version(), self.lower(pipeline=pipeline))
        return lowered[1]
