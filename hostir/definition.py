"""`hostir.FusionDefinition`: the IR frontend's `hostir_dialect.FusionDefinition` plus
`lower()` (the `hostir-lower` pipeline of `passes`) and `execute()` (lower, then run on
this rank with `runtime`). This package is the one layer above all three: the dialect
imports neither the passes nor the runtime, and the passes do not import the runtime
(docs/architecture.md).
"""

from __future__ import annotations

import os
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass, field

import torch
from xdsl.dialects.builtin import ModuleOp

from hostir import passes, runtime
from hostir.passes.specialize_extents import check_fit
from hostir.profiler import PythonProfiler
from hostir.runtime.layouts import shard_factor
from hostir.runtime.trace import traced_run
from hostir_dialect import FusionDefinition as FusionDefinitionIR
from hostir_dialect import TensorType, symbols
from hostir_dialect.diagnostics import HostIRError
from hostir_dialect.tensor_type import DYNAMIC

NO_EFFECT_OPTIONS = frozenset(("host_ir_lowering", "infer_contiguity", "resize_scheduler"))
"""nvFuser options its multi-device tests pass to `execute` that change how nvFuser
schedules, not what it computes: hostir always lowers to a host program, lays inputs out
itself and has no resize scheduler."""

LOWERED_PROGRAMS = 16
"""How many lowered programs a definition keeps (by version, pipeline and extents)."""

SPECIALIZED_SHAPES = 4
"""For how many sets of input extents a definition of dynamic extents lowers a program of
their own (`specialize-extents`), as nvFuser's FusionExecutorCache concretizes a fusion for
the input shapes it meets; any further set runs the program of dynamic extents, which
needs no lowering (torch.compile likewise stops recompiling for shapes and goes dynamic),
unless the pipeline refuses that program: then every set is specialized."""


class FusionDefinition(FusionDefinitionIR):
    """nvFuser's `FusionDefinition`: define the fusion and its schedule (see
    `hostir_dialect.frontend`), then `lower()` or `execute()` it."""

    def __init__(self, name: str = "fusion"):
        super().__init__(name)
        self._executors = runtime.ExecutorCache()
        self._lowered: runtime.executor_cache.LruCache[ModuleOp] = runtime.executor_cache.LruCache(LOWERED_PROGRAMS)
        self._specializations: _Specializations | None = None
        self._last_extents: dict[str, tuple[tuple[int, str], tuple[int, ...]]] = {}
        """By pipeline: the version and extents the last `execute` lowered for."""

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
        runs it. A definition of dynamic extents (`define_tensor([-1, ...])`) is lowered
        for the extents of the run, as nvFuser concretizes it, so that the cost model and
        the copy engines see the sizes (`specialize-extents`), for up to
        SPECIALIZED_SHAPES sets of extents; where a rank may not hold an input of dynamic
        extents, or after those sets, the program of dynamic extents runs."""
        for name in (*_enable_options, *_disable_options):
            if name not in NO_EFFECT_OPTIONS:
                known = ", ".join(sorted(NO_EFFECT_OPTIONS))
                raise ValueError(f"nvFuser option {name!r} has no meaning in hostir; it takes {known}")
        if options.get("rank") is None:
            runtime.join_torchrun_world()
        options["device"] = runtime.executor_cache.device_of_inputs(inputs, options.get("device"))
        profiler = PythonProfiler.active
        traced = trace is not None or profiler is not None
        extents = self._specialization(inputs, options.get("world_size"), pipeline)
        self._last_extents[pipeline] = (self._version(), extents)
        evaluator = self._executors.evaluator((self._version(), pipeline, extents),
                                              lambda: self._lowered_program(pipeline, extents), trace=traced, **options)
        if profiler is None:
            return runtime.executor_cache.run_and_trace(evaluator, list(inputs), trace)
        outputs, ran = traced_run(evaluator, list(inputs))
        profiler.record(ran)
        if trace is not None:
            ran.save(trace)
        return outputs

    def output_types(self, pipeline: str = "hostir-lower") -> list[TensorType]:
        """The outputs' types as `pipeline` lowers them: the mesh and sharding of what
        `execute` returns (after a run of a fusion of dynamic extents, of what that run
        returned: lowered for its extents, a reshape may keep a sharding it did not)."""
        ran = self._last_extents.get(pipeline)
        extents = ran[1] if ran is not None and ran[0] == self._version() else ()
        (program,) = symbols.programs(self._lowered_program(pipeline, extents))
        return [t for t in program.function_type.outputs.data if isinstance(t, TensorType)]  # a program returns tensors

    def _version(self) -> tuple[int, str]:
        return self.revision, self.name

    def _lowered_program(self, pipeline: str, extents: tuple[int, ...] = ()) -> ModuleOp:
        """The program of this version lowered by `pipeline` (after `specialize-extents` to
        `extents`, where given), once for all option sets (the last LOWERED_PROGRAMS kept)."""
        specialized = f"specialize-extents{{extents={','.join(map(str, extents))}}},{pipeline}" if extents else pipeline
        return self._lowered.get((self._version(), specialized), lambda: self.lower(pipeline=specialized))

    def _specialization(self, inputs: Sequence[object], world_size: int | None, pipeline: str) -> tuple[int, ...]:
        """The extents to lower this run's program for (none: the program of dynamic
        extents). Every rank decides alike: from the types and the world, and from
        extents every rank sees (each holds a shard of every input of dynamic extents).
        Where the program of dynamic extents runs (it is not refused), only for the first
        SPECIALIZED_SHAPES sets of extents, and only where the specialized program is not
        refused and takes and returns what that program does (meshes and parallel pieces:
        a reshape of dynamic extents may map no sharding where one of static extents
        does), so that the sets of extents after them see the same layouts."""
        state = self._specializations_in(_world_size(world_size))
        if not state.plan:
            return ()
        extents = _run_extents(state.plan, inputs)
        if extents and extents not in state.fitting:
            if state.fusion is None:
                state.fusion = self.to_module()
            _refuse_unfitting(state.fusion, extents, self.name)
            state.fitting.add(extents)
        seen = state.seen[pipeline]
        if not extents or extents in seen:
            return extents
        if pipeline not in state.dynamic_layouts:
            state.dynamic_layouts[pipeline] = self._refused_or_layouts(pipeline)
        dynamic = state.dynamic_layouts[pipeline]
        if dynamic is not None and (len(seen) >= SPECIALIZED_SHAPES or self._refused_or_layouts(pipeline, extents) != dynamic):
            return ()  # the program of dynamic extents runs (or refuses) these
        seen.add(extents)
        return extents

    def _specializations_in(self, world_size: int) -> _Specializations:
        """This version's specializations in a world of `world_size` ranks (built once:
        `execute` pays a lookup per call, not a walk of the types)."""
        key = (self._version(), world_size)
        if self._specializations is None or self._specializations.key != key:
            self._specializations = _Specializations(key, _extent_plan([t.type for t in self._inputs], world_size))
        return self._specializations

    def _refused_or_layouts(self, pipeline: str, extents: tuple[int, ...] = ()) -> list[object] | None:
        """The signature layouts of the program lowered for `extents` (by default the
        program of dynamic extents; None: `pipeline` refuses it, as a forced copy-engine
        transport does one of dynamic extents, or a split that the extents do not divide)."""
        try:
            return _signature_layouts(self._lowered_program(pipeline, extents))
        except HostIRError:
            return None


def _signature_layouts(module: ModuleOp) -> list[object]:
    """Each argument's and result's mesh and, per axis, its kind and its pieces' parallel
    types: what a caller shards and unshards by, whatever the extents."""
    (program,) = symbols.programs(module)
    types = [*program.function_type.inputs.data, *program.function_type.outputs.data]
    return [(t.mesh, [(a.kind, [p.parallel for p in a.pieces]) for a in t.axes]) if isinstance(t, TensorType) else t
            for t in types]


def _world_size(given: int | None) -> int:
    if given is not None:
        return given
    world = runtime.executor_cache.current_world()
    return 1 if world is None else torch.distributed.get_world_size()


@dataclass(frozen=True)
class _DynamicInput:
    """An input of dynamic extents: where its shard's extents are and how many shards
    make each global extent."""

    index: int
    dims: int
    """How many dimensions its shard has."""
    axes: tuple[tuple[int, int], ...]
    """Per dynamic axis: its dimension in the shard and its shards."""


@dataclass
class _Specializations:
    """The sets of extents a definition's version was specialized for in one world."""

    key: tuple[tuple[int, str], int]
    plan: list[_DynamicInput]
    """The inputs of dynamic extents (none: nothing to specialize)."""
    seen: defaultdict[str, set[tuple[int, ...]]] = field(default_factory=lambda: defaultdict(set))
    """By pipeline: the sets of extents specialized for."""
    dynamic_layouts: dict[str, list[object] | None] = field(default_factory=dict)
    """By pipeline: the program of dynamic extents' signature layouts (None: refused)."""
    fitting: set[tuple[int, ...]] = field(default_factory=set)
    """The sets of extents the fusion's ops take together (`_refuse_unfitting`)."""
    fusion: ModuleOp | None = None
    """The version's fusion, which `_refuse_unfitting` specializes copies of (built once)."""


def _refuse_unfitting(fusion: ModuleOp, extents: tuple[int, ...], name: str) -> None:
    for func in symbols.fusions_to_lower(fusion):
        try:
            check_fit(func, extents, name)
        except HostIRError as error:
            raise runtime.InputError(str(error)) from None


def _extent_plan(types: Sequence[object], world_size: int) -> list[_DynamicInput]:
    """Where `execute` reads the global extents of the dynamic axes of the inputs of
    `types`; none where an input of dynamic extents is not held by every rank of the
    world (its ranks could then not agree), has a reduction axis, or shards known only
    at run time."""
    plan = []
    for index, t in enumerate(types):
        if not isinstance(t, TensorType) or DYNAMIC not in t.shape:
            continue
        factors = [shard_factor(t, i) for i in range(t.rank)]
        held_everywhere = t.mesh is None or set(range(world_size)) <= set(t.mesh.devices)
        if not held_everywhere or None in factors or any(a.is_reduction for a in t.axes):
            return []
        dynamic = [i for i, a in enumerate(t.axes) if a.extent == DYNAMIC]
        plan.append(_DynamicInput(index, t.rank, tuple((t.value_position(i), factors[i]) for i in dynamic)))  # type: ignore[misc]  # no None left
    return plan


def _run_extents(plan: Sequence[_DynamicInput], inputs: Sequence[object]) -> tuple[int, ...]:
    """The global extent of each dynamic axis of the inputs, in order (what
    `specialize-extents` takes): a shard's extent times its shards; none where an input
    is not a tensor of as many dimensions as its type has (the evaluator refuses it)."""
    extents: list[int] = []
    for entry in plan:
        value = inputs[entry.index] if entry.index < len(inputs) else None
        if not isinstance(value, torch.Tensor) or value.dim() != entry.dims:
            return ()
        extents.extend(value.shape[position] * shards for position, shards in entry.axes)
    return tuple(extents)
