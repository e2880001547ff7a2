"""Runs a sequence of passes: disable by name, dump IR after passes, time them, verify.

nvFuser's OptimizationPass (#4385/#4401) gives every pass an enable flag and a
dump-after option; here they are options of one run instead of global state, so two
pipelines in one process cannot affect each other.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import TextIO

from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp
from xdsl.passes import ModulePass
from xdsl.printer import Printer
from xdsl.utils.arg_spec import ArgSpec, parse_pipeline

from hostir_dialect.diagnostics import verify_located

from .registry import PASS_NAMES, PIPELINES, pass_class

ALL = "all"


@dataclass(frozen=True)
class PassManagerOptions:
    disabled: frozenset[str] = frozenset()
    """Passes (by CLI name) to skip."""
    print_ir_after: frozenset[str] = frozenset()
    """Passes after which to dump the IR; contains ALL to dump after every pass."""
    time_passes: bool = False
    verify_each: bool = True
    dump_stream: TextIO | None = None
    """Where IR dumps and timings go (default: stderr, as MLIR tools do)."""

    def dumps_after(self, name: str) -> bool:
        return ALL in self.print_ir_after or name in self.print_ir_after


@dataclass
class PassTiming:
    name: str
    seconds: float


@dataclass
class PassRun:
    timings: list[PassTiming] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)


def known_names() -> set[str]:
    return set(PASS_NAMES) | set(PIPELINES)


def expand_specs(specs: Iterable[ArgSpec]) -> list[ArgSpec]:
    """Replace each pipeline name by its member passes."""
    expanded: list[ArgSpec] = []
    for spec in specs:
        if spec.name in PIPELINES:
            if spec.parameters:
                raise ValueError(f"pipeline {spec.name} takes no options; list its passes to configure them")
            expanded.extend(expand_specs(ArgSpec(member, {}) for member in PIPELINES[spec.name]))
        elif spec.name in PASS_NAMES:
            expanded.append(spec)
        else:
            raise ValueError(f"unknown pass {spec.name!r}; available: {', '.join(sorted(known_names()))}")
    return expanded


def build_passes(pipeline: str) -> list[ModulePass]:
    """`"a,b{opt=1},hostir-lower"` -> pass instances, pipelines expanded."""
    return [pass_class(spec.name).from_pass_spec(spec) for spec in expand_specs(parse_pipeline(pipeline))]


def run_passes(ctx: Context, module: ModuleOp, passes: Sequence[ModulePass], options: PassManagerOptions = PassManagerOptions()) -> PassRun:
    run = PassRun()
    stream = options.dump_stream or sys.stderr
    for module_pass in passes:
        if module_pass.name in options.disabled:
            run.skipped.append(module_pass.name)
            continue
        start = time.perf_counter()
        module_pass.apply(ctx, module)
        run.timings.append(PassTiming(module_pass.name, time.perf_counter() - start))
        if options.verify_each:
            verify_located(module)
        if options.dumps_after(module_pass.name):
            stream.write(f"// -----// IR Dump After {module_pass.name} //----- //\n")
            Printer(stream=stream).print_op(module)
            stream.write("\n\n")
    if options.time_passes:
        stream.write(format_timings(run.timings))
    return run


def format_timings(timings: Sequence[PassTiming]) -> str:
    total = sum(t.seconds for t in timings) or 1e-12
    lines = ["===-------------------------------------------------------------------------===",
             "                          ... Pass execution timing report ...",
             "===-------------------------------------------------------------------------===",
             f"  Total Execution Time: {total:.4f} seconds", "",
             "   ----Wall Time----  ----Name----"]
    for t in timings:
        lines.append(f"   {t.seconds:8.4f} ({100 * t.seconds / total:5.1f}%)  {t.name}")
    lines.append(f"   {total:8.4f} (100.0%)  Total")
    return "\n".join(lines) + "\n"
