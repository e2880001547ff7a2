"""`hostir-opt`: xdsl-opt with hostir's dialects and passes, plus xDSL's `canonicalize`,
`cse` and `dce` (they respect hostir's memory effects, so they never remove host work).

It overrides only what it must of `xDSLOptMain`: the dialects, passes and frontend it
registers; the pipeline, built by passes/pipeline.py so that pipelines (`-p hostir-lower`)
are expanded and `--disable-pass`, `--print-ir-after[-all]` and `--time-passes` reach
their member passes; `-o`, written only once the run has succeeded, as mlir-opt writes it
(`write_output`: a regular file is replaced, a device, FIFO or link written through);
`--help`, which lists
every pass with its one-line description, as `mlir-opt --help` does;
`--verify-each-pass-numerically`, which hands the pipeline the runtime's numerical
`PassCheck`, found through the `hostir.pass_checks` entry points (pyproject.toml) since
the passes do not import the runtime (docs/architecture.md). Every op is
located, so parse, verifier and pass errors print `file:line:col: error: ...` and exit 1
(with `--verify-diagnostics` they are printed to stdout and the exit code is 0, as in
xdsl-opt); `--debug` shows the Python traceback instead.
"""

from __future__ import annotations

import argparse
import contextlib
import errno
import gc
import os
import secrets
import stat
import sys
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from importlib.metadata import PackageNotFoundError, entry_points, version
from io import BytesIO, StringIO
from pathlib import Path
from typing import IO

from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp
from xdsl.ir import Attribute
from xdsl.passes import ModulePass, get_pass_option_infos
from xdsl.targets.mlir import MLIRTarget
from xdsl.transforms import get_all_passes as get_all_xdsl_passes
from xdsl.utils.exceptions import DiagnosticException, ParseError
from xdsl.xdsl_opt_main import xDSLOptMain

from hostir_dialect import remarks
from hostir_dialect.context import DIALECTS
from hostir_dialect.diagnostics import LocatingParser, parse_error, read_source, verify_located
from hostir_dialect.printer import Printer

from .pipeline import (
    ALL,
    DEFAULT_RUN_TIMEOUT,
    VERIFY_EACH_VARIABLE,
    PassCheck,
    PassManagerOptions,
    PassRun,
    apply_pipeline,
    build_pipeline,
    check_pass_names,
    check_seconds,
    verify_each_by_default,
)
from .registry import PIPELINE_DEFAULTS, PIPELINES, get_all_passes

UPSTREAM_PASSES = ("canonicalize", "cse", "dce")
"""xDSL's passes hostir-opt registers (xdsl.transforms.get_all_passes() by name)."""

_UNDOCUMENTED = {
    "cse": "Eliminate common sub-expressions (xDSL)",
    "dce": "Eliminate dead code: unused ops without side effects (xDSL)",
}
"""Descriptions of the upstream passes whose classes have no docstring."""


PASS_CHECKS = "hostir.pass_checks"
"""The entry-point group of `PassCheck` classes by name; the runtime registers `numerical`."""


def load_pass_check(name: str, **options) -> PassCheck:
    """A new instance of the `PassCheck` registered as `name`, with `options`."""
    found = entry_points(group=PASS_CHECKS, name=name)
    if not found:
        raise ValueError(f"no pass check {name!r} is installed (entry points {PASS_CHECKS}); "
                         "install hostir with `pip install -e .`")
    return next(iter(found)).load()(**options)


def registered_passes() -> dict[str, Callable[[], type[ModulePass]]]:
    """What hostir-opt's `-p` accepts besides pipelines: hostir's passes and xDSL's
    UPSTREAM_PASSES, each a lazy loader."""
    upstream = get_all_xdsl_passes()
    return {**get_all_passes(), **{name: upstream[name] for name in UPSTREAM_PASSES}}


class _PendingOutput(StringIO):
    """The text for `-o FILE`, held until the run has succeeded (xDSLOptMain closes its
    output stream whether or not the run fails)."""

    def close(self) -> None:
        pass


def write_output(name: str, text: str) -> None:
    """Write `text` to `-o NAME` as mlir-opt does: `-` is standard output; a regular file,
    or none yet, is replaced in one step (`replace_atomically`); anything else (a device
    such as /dev/null, a FIFO, a symbolic link) is opened and written through, never
    replaced: run as root, replacing /dev/null would break it for the whole machine."""
    if name == "-":
        sys.stdout.write(text)
        sys.stdout.flush()
        return
    path = Path(name)
    try:
        status = path.lstat()
    except FileNotFoundError:
        status = None
    if status is not None and stat.S_ISDIR(status.st_mode):
        raise IsADirectoryError(errno.EISDIR, os.strerror(errno.EISDIR), name)
    if status is None or stat.S_ISREG(status.st_mode):
        replace_atomically(path, text, status)
        return
    with open(path, "w") as stream:
        stream.write(text)


def replace_atomically(path: Path, text: str, old: os.stat_result | None) -> None:
    """Replace `path` by `text` in one step: a failure leaves it untouched, and the input
    file may be the output file, since it was read in full before. The new file keeps the
    old one's mode and, where allowed, its owner; a new file gets the umask's mode. Errors
    name `path`, never the temporary file."""
    temporary = path.parent / f".{path.name}.{secrets.token_hex(8)}.tmp"
    try:
        descriptor = os.open(temporary, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o666)  # less the umask
    except OSError as error:
        raise OSError(error.errno, error.strerror, str(path)) from None
    try:
        if old is not None:
            os.fchmod(descriptor, stat.S_IMODE(old.st_mode))
            with contextlib.suppress(PermissionError):  # only root may give a file away
                os.fchown(descriptor, old.st_uid, old.st_gid)
        with os.fdopen(descriptor, "w") as stream:
            stream.write(text)
        os.replace(temporary, path)
    except BaseException:
        os.unlink(temporary)
        raise


def hostir_version() -> str:
    try:
        return version("hostir")
    except PackageNotFoundError:  # run from a checkout that was never installed
        return "(not installed)"


class HostIROptMain(xDSLOptMain):
    @property
    def version_format(self) -> str:  # type: ignore[override]  # xDSL reads it only for --version
        return f"hostir-opt {hostir_version()} (xdsl {{xdsl_version}})"

    def run(self):
        with remarks.printed_on(sys.stderr) if self.args.remarks else contextlib.nullcontext():
            super().run()
        if self.args.output_file is not None:
            write_output(self.args.output_file, self._pending.getvalue())

    def prepare_output(self) -> IO[str]:
        if self.args.output_file is None:
            return sys.stdout
        self._pending = _PendingOutput()
        return self._pending

    def register_all_dialects(self):
        for dialect in DIALECTS:
            self.ctx.register_dialect(dialect.name, lambda dialect=dialect: dialect)

    def register_all_passes(self):
        for name, loader in registered_passes().items():
            self.register_pass(name, loader)

    def register_all_targets(self):
        # Only textual IR, named directly instead of scanning installed entry points,
        # which is slower and finds nothing where xdsl is on the path without metadata.
        self.available_targets["mlir"] = lambda: TextTarget

    def register_all_frontends(self):
        def parse_mlir(io: IO[bytes], line_offset: int = 0):
            parser = LocatingParser(self.ctx, io.read(), self.get_input_name(), line_offset)
            return parser.parse_module(not self.args.no_implicit_module)

        self.available_frontends["mlir"] = parse_mlir

    def get_input_stream(self) -> tuple[IO[bytes], str]:
        """As mlir-opt: `-` (or no file) is standard input, and any file is MLIR text,
        whatever its extension (MLIR is hostir-opt's only frontend); read whole, up to
        a bound (`read_source`)."""
        if self.args.input_file in (None, "-"):
            return BytesIO(read_source(sys.stdin.buffer, self.get_input_name())), "mlir"
        with open(self.args.input_file, "rb") as stream:
            return BytesIO(read_source(stream, self.get_input_name())), "mlir"

    def get_input_name(self) -> str:
        return "<stdin>" if self.args.input_file in (None, "-") else self.args.input_file

    def parse_chunk(self, chunk, file_extension, start_offset=0):
        try:
            module = self.available_frontends[file_extension](chunk, start_offset)
        except ParseError as error:
            located = parse_error(error, start_offset)
            if not self.args.parsing_diagnostics:
                raise located from (error if self.args.debug else None)
            print(located)  # --parsing-diagnostics: the diagnostic is the output, exit 0
            return None
        if not self.args.disable_verify:
            verify_located(module)
        return module

    def register_all_arguments(self, arg_parser: argparse.ArgumentParser):
        # xDSL's -p help names the registered passes; hostir-opt's -p takes pipelines too.
        passes = self.available_passes
        self.available_passes = {**passes, **dict.fromkeys(PIPELINES, passes[next(iter(passes))])}
        try:
            super().register_all_arguments(arg_parser)
        finally:
            self.available_passes = passes
        arg_parser.add_argument("--disable-pass", action="append", default=[], metavar="NAME",
                                help="skip this pass (repeatable; also inside pipelines such as hostir-lower)")
        arg_parser.add_argument("--print-ir-after-all", action="store_true",
                                help="dump the IR to stderr after every pass")
        arg_parser.add_argument("--print-ir-after", action="append", default=[], metavar="NAME",
                                help="dump the IR to stderr after this pass (repeatable)")
        arg_parser.add_argument("--verify-each", action="store_true",
                                help="verify the IR after every pass, not only after the pipeline "
                                     f"(the default when {VERIFY_EACH_VARIABLE}=1, as in the test suites)")
        arg_parser.add_argument("--remarks", action="store_true",
                                help="print on stderr each decision a pass takes on its own, located, such as "
                                     "transport=auto's pipelines and transports, with the estimates behind it")
        arg_parser.add_argument("--debug", action="store_true",
                                help="show Python tracebacks instead of one-line diagnostics")
        arg_parser.add_argument("--verify-each-pass-numerically", action="store_true",
                                help="run the module before and after every pass on the same random inputs "
                                     "(on CPU ranks when it names several devices) and report the first pass "
                                     "that changes an output")
        arg_parser.add_argument("--run-timeout", type=float, default=DEFAULT_RUN_TIMEOUT, metavar="SECONDS",
                                help="seconds the runs of --verify-each-pass-numerically may take before they are "
                                     f"stopped and reported (default {DEFAULT_RUN_TIMEOUT:g}, per launch of ranks)")
        # --help ends with every pass and pipeline; the list imports every pass, so it is
        # built only when the help is printed.
        format_help = arg_parser.format_help

        def format_help_with_passes() -> str:
            arg_parser.epilog = self.pass_list()
            arg_parser.formatter_class = argparse.RawDescriptionHelpFormatter
            return format_help()

        arg_parser.format_help = format_help_with_passes  # type: ignore[method-assign]  # this parser's own help, built late

    def setup_pipeline(self):
        check_seconds("--run-timeout", self.args.run_timeout)
        check_pass_names(self.args.disable_pass, "--disable-pass", self.available_passes)
        check_pass_names(self.args.print_ir_after, "--print-ir-after", self.available_passes)
        after = set(self.args.print_ir_after) | ({ALL} if self.args.print_ir_after_all else set())
        if self.args.print_between_passes:
            after.add(ALL)
        self.options = PassManagerOptions(
            disabled=frozenset(self.args.disable_pass),
            print_ir_after=frozenset(after),
            time_passes=self.args.time_passes,
            verify=not self.args.disable_verify,
            # the numerical check runs the module after every pass: only a verified one
            verify_each=not self.args.disable_verify
            and (self.args.verify_each or self.args.verify_each_pass_numerically or verify_each_by_default()),
            check=load_pass_check("numerical", timeout=self.args.run_timeout)
            if self.args.verify_each_pass_numerically else None,
        )
        self.pass_run = PassRun()
        self.pipeline = build_pipeline(self.args.passes, self.options, self.available_passes, self.pass_run)

    def apply_passes(self, prog):
        apply_pipeline(self.pipeline, self.ctx, prog, self.options, self.pass_run)

    def pass_list(self) -> str:
        """Every pass with its one-line description and its options, and every
        pipeline, for --help."""
        lines = ["passes and pipelines (-p NAME{option=value ...},...):"]
        width = max(len(name) for name in [*self.available_passes, *PIPELINES]) + 2
        for name, loader in sorted(self.available_passes.items()):
            pass_class = loader()
            lines.append(f"  {name.ljust(width)}{description(name, pass_class)}")
            options = [f"{o.name.replace('_', '-')}={o.default_value} ({o.expected_type.strip(QUOTES)})"
                       for o in get_pass_option_infos(pass_class)]
            if options:
                lines.append(f"  {''.ljust(width)}options: {', '.join(options)}")
        lines += [f"  {name.ljust(width)}pipeline: {', '.join(members)}"
                  + (f"\n  {''.ljust(width)}defaults: {PIPELINE_DEFAULTS[name]}" if name in PIPELINE_DEFAULTS else "")
                  for name, members in PIPELINES.items()]
        return "\n".join(lines)


QUOTES = "'\""
"""Around option types that `from __future__ import annotations` leaves as strings."""


@dataclass(frozen=True)
class TextTarget(MLIRTarget):
    """xDSL's `mlir` target, printing with hostir's Printer (the same text, faster); syntax
    highlighting is xDSL's own printer."""

    def emit(self, ctx: Context, module: ModuleOp, output: IO[str]) -> None:
        if self.syntax_highlight:
            super().emit(ctx, module, output)
            return
        text = StringIO()  # written once: see hostir_dialect/printer.py
        printer = Printer(
            stream=text,
            print_generic_format=self.print_generic_format,
            print_properties_as_attributes=self.print_properties_as_attributes,
            print_debuginfo=self.print_debuginfo,
        )
        printer.print_op(module)
        printer.print_metadata(ctx.loaded_dialects)
        output.write(text.getvalue() + "\n\n")


def description(name: str, pass_class: type[ModulePass]) -> str:
    """The first line of the pass class's own docstring (a dataclass without one gets a
    generated signature, which is not a description)."""
    doc = pass_class.__dict__.get("__doc__") or ""
    if not doc.strip() or doc.startswith(f"{pass_class.__name__}("):
        return _UNDOCUMENTED.get(name, "")
    return doc.strip().splitlines()[0].rstrip(".")


def main(args: Sequence[str] | None = None, tool: type[HostIROptMain] = HostIROptMain) -> int:
    """Run hostir-opt (or `tool`, a subclass registering more passes) on `args`."""
    argv = list(sys.argv[1:] if args is None else args)
    debug = "--debug" in argv
    verify_attributes = Attribute.__post_init__
    try:
        tool(args=argv).run()
    except (ParseError, DiagnosticException, ValueError, OSError) as error:
        if debug:
            raise
        print(_one_diagnostic(error), file=sys.stderr)
        return 1
    finally:
        # xDSL's --disable-verify turns off the checks of every attribute built after it
        # in the process: a caller's own attributes (a test suite's) must keep theirs.
        Attribute.__post_init__ = verify_attributes  # type: ignore[method-assign]  # undoes xDSL's --disable-verify
    return 0


def _one_diagnostic(error: Exception) -> str:
    if isinstance(error, OSError):
        return f"error: {error.strerror}: {error.filename}"
    if isinstance(error, (ParseError, DiagnosticException)):
        return str(error).rstrip()
    return f"error: {error}"


@contextlib.contextmanager
def garbage_collected_rarely() -> Iterator[None]:
    """Python's default collector thresholds suit programs whose objects come and go; a
    compilation keeps nearly everything it builds until it ends, so each time the heap
    grows by a quarter a full collection walks every live object: 13 full collections,
    2.4 of 43 CPU seconds on a 10,000-op fusion (benchmarks/compile_time.py). Inside this
    context what the imports built is frozen (never garbage) and the young generation is
    collected every 10,000 allocations instead of 700: then no full collection runs, for
    20% more peak memory. The thresholds are restored when it ends, and the frozen objects
    thawed unless some were frozen before. Only hostir-opt's own process (console_main)
    and the compile-time benchmark enter it; `main` leaves a caller's collector alone."""
    thresholds, frozen_before = gc.get_threshold(), gc.get_freeze_count()
    gc.freeze()
    gc.set_threshold(10_000, 10, 10)
    try:
        yield
    finally:
        gc.set_threshold(*thresholds)
        if not frozen_before:
            gc.unfreeze()


def console_main() -> None:
    with garbage_collected_rarely():
        code = main()
    sys.exit(code)


if __name__ == "__main__":
    console_main()
