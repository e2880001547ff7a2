"""`hostir-opt`: xdsl-opt with hostir's dialects, passes and pipelines.

Beyond xdsl-opt: pipelines (`-p hostir-lower`) are expanded so `--disable-pass`,
`--print-ir-after[-all]` and `--time-passes` reach their member passes; every op is
located, so parse, verifier and pass errors print `file:line:col: error: ...` and exit 1
(with `--verify-diagnostics` they are printed to stdout and the exit code is 0, as in
xdsl-opt); `--debug` shows the Python traceback instead.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
from collections.abc import Sequence
from io import StringIO
from pathlib import Path
from typing import IO

from xdsl.utils.exceptions import DiagnosticException, ParseError
from xdsl.xdsl_opt_main import xDSLOptMain

from hostir_dialect.context import DIALECTS
from hostir_dialect.diagnostics import LocatingParser, parse_error, verify_located

from .pass_manager import ALL, PassManagerOptions, build_passes, known_names, run_passes


class _PendingOutput(StringIO):
    """The text for `-o FILE`, held until the run has succeeded (xDSLOptMain closes its
    output stream whether or not the run fails)."""

    def close(self) -> None:
        pass


def write_atomically(path: Path, text: str) -> None:
    """Replace `path` by `text` in one step: a failure leaves it untouched, and the
    input file may be the output file, since it was read in full before."""
    descriptor, temporary = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(descriptor, "w") as stream:
            stream.write(text)
        os.replace(temporary, path)
    except BaseException:
        os.unlink(temporary)
        raise


class HostIROptMain(xDSLOptMain):
    version_format = "hostir-opt (xdsl {xdsl_version})"

    def run(self):
        super().run()
        if self.args.output_file is not None:
            write_atomically(Path(self.args.output_file), self._pending.getvalue())

    def prepare_output(self) -> IO[str]:
        if self.args.output_file is None:
            return sys.stdout
        self._pending = _PendingOutput()
        return self._pending

    def register_all_dialects(self):
        for dialect in DIALECTS:
            self.ctx.register_dialect(dialect.name, lambda dialect=dialect: dialect)

    def register_all_passes(self):
        # Named here for --help only: the pass manager builds passes and expands pipelines.
        self.available_passes = dict.fromkeys(sorted(known_names()))  # type: ignore[arg-type]

    def register_all_targets(self):
        # Only textual IR; named directly instead of scanning installed entry points,
        # which is slower and finds nothing where xdsl is on the path without metadata.
        from xdsl.targets import get_all_targets

        self.available_targets["mlir"] = get_all_targets()["mlir"]

    def register_all_frontends(self):
        def parse_mlir(io: IO[bytes], line_offset: int = 0):
            text = io.read().decode()
            parser = LocatingParser(self.ctx, text, self.get_input_name(), line_offset)
            return parser.parse_module(not self.args.no_implicit_module)

        self.available_frontends["mlir"] = parse_mlir

    def parse_chunk(self, chunk, file_extension, start_offset=0):
        try:
            module = self.available_frontends[file_extension](chunk, start_offset)
        except ParseError as error:
            raise parse_error(error, start_offset) from (error if self.args.debug else None)
        if not self.args.disable_verify:
            verify_located(module)
        return module

    def register_all_arguments(self, arg_parser: argparse.ArgumentParser):
        super().register_all_arguments(arg_parser)
        arg_parser.add_argument("--disable-pass", action="append", default=[], metavar="NAME",
                                help="skip this pass (repeatable; also inside pipelines such as hostir-lower)")
        arg_parser.add_argument("--print-ir-after-all", action="store_true",
                                help="dump the IR to stderr after every pass")
        arg_parser.add_argument("--print-ir-after", action="append", default=[], metavar="NAME",
                                help="dump the IR to stderr after this pass (repeatable)")
        arg_parser.add_argument("--debug", action="store_true",
                                help="show Python tracebacks instead of one-line diagnostics")

    def setup_pipeline(self):
        self.passes = build_passes(self.args.passes) if self.args.passes else []
        after = set(self.args.print_ir_after) | ({ALL} if self.args.print_ir_after_all else set())
        if self.args.print_between_passes:
            after.add(ALL)
        self.pass_options = PassManagerOptions(
            disabled=frozenset(self.args.disable_pass),
            print_ir_after=frozenset(after),
            time_passes=self.args.time_passes,
            verify_each=not self.args.disable_verify,
        )

    def apply_passes(self, module):
        run_passes(self.ctx, module, self.passes, self.pass_options)


def main(args: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if args is None else args)
    debug = "--debug" in argv
    try:
        HostIROptMain(args=argv).run()
    except (ParseError, DiagnosticException, ValueError, OSError) as error:
        if debug:
            raise
        print(_one_diagnostic(error), file=sys.stderr)
        return 1
    return 0


def _one_diagnostic(error: Exception) -> str:
    if isinstance(error, OSError):
        return f"error: {error.strerror}: {error.filename}"
    if isinstance(error, (ParseError, DiagnosticException)):
        return str(error).rstrip()
    return f"error: {error}"


def console_main() -> None:
    sys.exit(main())


if __name__ == "__main__":
    console_main()
