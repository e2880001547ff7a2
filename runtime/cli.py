"""`hostir-run`: placeholder until the runtime lands."""

import sys


def console_main() -> None:
    print("hostir-run: no runtime yet", file=sys.stderr)
    sys.exit(2)
