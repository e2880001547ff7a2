"""Pass pipelines on xDSL's `PassPipeline`, with MLIR's pass instrumentation.

`build_pipeline("a,b{opt=1},hostir-lower", options)` expands pipeline names into their
member passes (so disabling a pass or dumping the IR after one reaches the members),
drops the disabled passes, and hands the rest to `PassPipeline.parse_spec` with one
`Instrumentation` callback, which verifies the module with located diagnostics when
the pipeline ends (after every pass with `verify_each`, as mlir-opt's `--verify-each`),
dumps it under MLIR's `// -----// IR Dump After NAME //----- //` header when asked, times
the passes and the verification, and shows it to a `PassCheck` when one is given
(`--verify-each-pass-numerically`); `apply_pipeline` prints MLIR's `--time-passes` report
when the pipeline ends, also when a pass failed.

Verifying walks the whole module, so after every pass it costs about as much as a pass;
the test suites turn it on (`HOSTIR_VERIFY_EACH=1`, the default of `verify_each`) so that
a pass that breaks the IR is caught at that pass.

nvFuser's OptimizationPass (#4385/#4401) gives every pass an enable flag and a
dump-after option; here they are options of one run instead of global state, so two
pipelines in one process cannot affect each other.
"""

from __future__ import annotations

import os
import sys
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field, fields
from typing import Any, Protocol, TextIO, get_type_hints

from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp
from xdsl.passes import ModulePass, PassPipeline
from xdsl.utils.arg_spec import ArgSpec, parse_pipeline
from xdsl.utils.exceptions import ArgSpecParseError
from xdsl.utils.hints import isa

from hostir_dialect.diagnostics import verify_located
from hostir_dialect.printer import op_text

from .registry import PIPELINE_DEFAULTS, PIPELINES, get_all_passes

ALL = "all"

VERIFY_EACH_VARIABLE = "HOSTIR_VERIFY_EACH"
"""Set to 1 (the test suites do) to verify after every pass unless told otherwise."""


def verify_each_by_default() -> bool:
    return os.environ.get(VERIFY_EACH_VARIABLE) == "1"


VERIFICATION = "verification"
"""The timing report's line for the time spent verifying."""

PassRegistry = Mapping[str, Callable[[], type[ModulePass]]]
"""CLI name -> loader of the pass class, as `get_all_passes()` and xDSL give them."""


class PassCheck(Protocol):
    """A check of what the passes do, beyond verification: it sees the module before the
    first pass and after each one, and raises a located HostIRError to stop the pipeline.
    The runtime provides one that interprets the module (runtime/verify_passes.py); the
    passes reach it through the `hostir.pass_checks` entry points, not an import."""

    def start(self, module: ModuleOp) -> None: ...

    def after_pass(self, module_pass: ModulePass, module: ModuleOp) -> None: ...

    def finish(self) -> None:
        """After the last pass: a check may defer its work to here."""


DEFAULT_RUN_TIMEOUT = 300.0
"""Seconds a `PassCheck` that runs the module lets one launch of its runs take
(`--run-timeout`)."""

MAX_SECONDS = 7 * 24 * 3600
"""The longest time limit the tools take, a week: torch keeps timeouts as timedeltas and
milliseconds, which `inf` or 1e300 seconds overflow inside a rank."""


def check_seconds(name: str, seconds: float) -> None:
    """Refuse a time limit that is not a positive number of seconds up to MAX_SECONDS."""
    if not 0 < seconds <= MAX_SECONDS:
        raise ValueError(f"{name} must be positive and at most {MAX_SECONDS} seconds (a week), got {seconds:g}")


@dataclass(frozen=True)
class PassManagerOptions:
    disabled: frozenset[str] = frozenset()
    """Passes (by CLI name) to skip."""
    print_ir_after: frozenset[str] = frozenset()
    """Passes after which to dump the IR; contains ALL to dump after every pass."""
    time_passes: bool = False
    verify: bool = True
    """Verify the module when the pipeline ends."""
    verify_each: bool = field(default_factory=verify_each_by_default)
    """Verify after every pass (implies `verify`)."""
    dump_stream: TextIO | None = None
    """Where IR dumps and timings go (default: stderr, as MLIR tools do)."""
    check: PassCheck | None = None
    """Shown the module before the first pass and after each one."""

    def dumps_after(self, name: str) -> bool:
        return ALL in self.print_ir_after or name in self.print_ir_after

    @property
    def stream(self) -> TextIO:
        return self.dump_stream or sys.stderr


@dataclass
class PassTiming:
    name: str
    seconds: float


@dataclass
class PassRun:
    timings: list[PassTiming] = field(default_factory=list)
    """Each pass's time, in order, then the time spent verifying (VERIFICATION), if any."""
    skipped: list[str] = field(default_factory=list)


class Instrumentation:
    """The callback `PassPipeline` calls before the first pass, between passes and after
    the last one: verification, IR dumps and timings, recorded in `run`."""

    def __init__(self, options: PassManagerOptions, run: PassRun):
        self.options = options
        self.run = run
        self.started = 0.0
        self.verifying: float | None = None
        """Seconds spent verifying in this application of the pipeline (None: none)."""

    def __call__(self, previous: ModulePass | None, module: ModuleOp, following: ModulePass | None) -> None:
        check = self.options.check
        if previous is None:
            self.run.timings.clear()  # a new application (e.g. the next --split-input-file chunk)
            self.verifying = None
            if check is not None:
                check.start(module)
        else:
            self.run.timings.append(PassTiming(previous.name, time.perf_counter() - self.started))
            self.after_pass(previous, module, last=following is None)
        if following is None:
            if self.verifying is not None:
                self.run.timings.append(PassTiming(VERIFICATION, self.verifying))
            if check is not None:
                check.finish()
        self.started = time.perf_counter()

    def after_pass(self, module_pass: ModulePass, module: ModuleOp, last: bool) -> None:
        if self.options.verify_each or (last and self.options.verify):
            started = time.perf_counter()
            verify_located(module)
            self.verifying = (self.verifying or 0.0) + time.perf_counter() - started
        if self.options.dumps_after(module_pass.name):
            stream = self.options.stream
            stream.write(f"// -----// IR Dump After {module_pass.name} //----- //\n")
            stream.write(op_text(module))
            stream.write("\n\n")
        if self.options.check is not None:
            self.options.check.after_pass(module_pass, module)


def known_names(available: PassRegistry | None = None) -> set[str]:
    return set(get_all_passes() if available is None else available) | set(PIPELINES)


def unknown_pass(name: str, available: PassRegistry | None = None, where: str = "") -> ValueError:
    return ValueError(f"unknown pass {name!r}{where}; available: {', '.join(sorted(known_names(available)))}")


def check_pass_names(names: Iterable[str], option: str, available: PassRegistry | None = None) -> None:
    """Refuse a name in `option` (e.g. `--disable-pass`) that names no pass or pipeline."""
    for name in names:
        if name not in known_names(available) and name != ALL:
            raise unknown_pass(name, available, f" in {option}")


def parse_specs(pipeline: str) -> list[ArgSpec]:
    """The pass specs of `"a,b{opt=1}"`; a syntax error is a one-line ValueError."""
    try:
        return list(parse_pipeline(pipeline))
    except ArgSpecParseError as error:  # a BaseException in xDSL: nothing else would catch it
        *_, where, _, _, reason = str(error).splitlines()
        column = where.rsplit(":", 1)[-1]
        raise ValueError(f"invalid pass pipeline {pipeline!r}: {reason.strip().lower()} at column {column}") from None


def expand_specs(specs: Iterable[ArgSpec], available: PassRegistry | None = None, given_to: str = "") -> list[ArgSpec]:
    """Replace each pipeline name by its member passes; refuse unknown names and options
    (`given_to`: the pipeline the specs are members of, for the message). A pipeline's
    options go to the members that declare them (`hostir-lower{transport=auto}`)."""
    available = get_all_passes() if available is None else available
    expanded: list[ArgSpec] = []
    for spec in specs:
        if spec.name in PIPELINES:
            options = {**_pipeline_defaults(spec.name), **spec.parameters}
            members = [ArgSpec(m, _options_for(available[m](), options)) for m in PIPELINES[spec.name]]
            unused = set(spec.parameters) - {option for member in members for option in member.parameters}
            if unused:
                raise ValueError(f"pipeline {spec.name} has no pass with option(s) {', '.join(sorted(unused))}")
            expanded.extend(expand_specs(members, available, f"pipeline {spec.name}"))
        elif spec.name in available:
            check_options(spec, available[spec.name](), given_to)
            expanded.append(spec)
        else:
            raise unknown_pass(spec.name, available)
    return expanded


_KINDS_OF_VALUE = {bool: "true or false", int: "an integer", str: "a word", int | None: "an integer",
                   tuple[int, ...]: "integers"}


def check_options(spec: ArgSpec, pass_class: type[ModulePass], given_to: str = "") -> None:
    """Refuse an option that `pass_class` does not declare, or a value of the wrong kind,
    in words that name the option and what it was given to (`given_to`, by default the
    pass; xDSL's own errors name neither)."""
    given_to = given_to or f"pass {spec.name}"
    declared = {option.name.replace("_", "-"): option.name for option in fields(pass_class) if option.name != "name"}
    hints = get_type_hints(pass_class)
    for option, value in spec.parameters.items():
        field_name = declared.get(option.replace("_", "-"))
        if field_name is None:
            raise ValueError(f"pass {spec.name} has no option {option!r}; its options: {', '.join(sorted(declared)) or 'none'}")
        hint = hints[field_name]
        if not _takes(hint, value):
            written = " ".join(str(v).lower() if isinstance(v, bool) else str(v) for v in value) or "nothing"
            raise ValueError(f"option {option} of {given_to} takes {_KINDS_OF_VALUE.get(hint, hint)}, got {written}")


def _takes(hint: Any, value: tuple) -> bool:
    """Whether xDSL's `from_pass_spec` converts `value` to `hint` (a value or a tuple)."""
    return (len(value) == 1 and isa(value[0], hint)) or isa(value, hint) or (not value and isa(None, hint))


def _pipeline_defaults(name: str) -> dict:
    """The options `PIPELINE_DEFAULTS` gives pipeline `name`, parsed as a spec's."""
    defaults = PIPELINE_DEFAULTS.get(name)
    return dict(parse_specs(f"{name}{{{defaults}}}")[0].parameters) if defaults else {}


def _options_for(pass_class: type[ModulePass], options: dict) -> dict:
    """The options among `options` that `pass_class` declares (as dataclass fields)."""
    declared = {option.name.replace("_", "-") for option in fields(pass_class)}
    return {name: value for name, value in options.items() if name in declared}


def build_pipeline(
    pipeline: str,
    options: PassManagerOptions = PassManagerOptions(),
    available: PassRegistry | None = None,
    run: PassRun | None = None,
) -> PassPipeline:
    """`"a,b{opt=1},hostir-lower"` -> an xDSL PassPipeline of the enabled member passes,
    instrumented by `options`; `run` (if given) records skipped passes and timings."""
    available = get_all_passes() if available is None else available
    run = PassRun() if run is None else run
    specs = expand_specs(parse_specs(pipeline), available)
    run.skipped.extend(s.name for s in specs if s.name in options.disabled)
    enabled = ",".join(str(s) for s in specs if s.name not in options.disabled)
    return PassPipeline.parse_spec(dict(available), enabled, Instrumentation(options, run))


def build_passes(pipeline: str, available: PassRegistry | None = None) -> list[ModulePass]:
    """`"a,b{opt=1},hostir-lower"` -> pass instances, pipelines expanded."""
    return list(build_pipeline(pipeline, available=available).passes)


def run_passes(
    ctx: Context, module: ModuleOp, passes: Sequence[ModulePass], options: PassManagerOptions = PassManagerOptions()
) -> PassRun:
    """Apply pass instances in order, skipping the disabled ones, instrumented by `options`."""
    if not isinstance(options, PassManagerOptions):
        raise TypeError(f"options must be a PassManagerOptions, got {options!r}")
    run = PassRun(skipped=[p.name for p in passes if p.name in options.disabled])
    enabled = tuple(p for p in passes if p.name not in options.disabled)
    apply_pipeline(PassPipeline(enabled, Instrumentation(options, run)), ctx, module, options, run)
    return run


def apply_pipeline(pipeline: PassPipeline, ctx: Context, module: ModuleOp, options: PassManagerOptions,
                   run: PassRun) -> None:
    """`pipeline.apply`, then MLIR's `--time-passes` report when asked: also when a pass
    fails (the report then lists the passes that completed)."""
    try:
        pipeline.apply(ctx, module)
    finally:
        if options.time_passes:
            options.stream.write(format_timings(run.timings))


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
