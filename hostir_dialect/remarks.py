"""Remarks: the decisions a pass takes on its own, one located line each, as mlir-opt's
`-pass-remarks` reports them (`in.mlir:3:3: remark: choose-pipelining: pipeline dropped:
estimated 0.120 ms whole vs 0.310 ms in 4 chunks`).

Passes log them on the `hostir.remarks` logger at INFO, which nothing shows unless asked:
`hostir-opt --remarks` prints them on stderr (`printed_on`), and a Python caller may
attach a handler of its own (`logging.getLogger("hostir.remarks")`).
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Iterator
from typing import TextIO

from xdsl.ir import Operation

from .diagnostics import location_of

LOGGER = logging.getLogger("hostir.remarks")


def remark(op: Operation, pass_name: str, message: str) -> None:
    """Report a decision `pass_name` took about `op`, located at it."""
    if LOGGER.isEnabledFor(logging.INFO):
        where = location_of(op)
        LOGGER.info(f"{where + ': ' if where else ''}remark: {pass_name}: {message}")


@contextlib.contextmanager
def printed_on(stream: TextIO) -> Iterator[None]:
    """Print every remark on `stream` while inside; the logger is as it was after."""
    handler = logging.StreamHandler(stream)
    handler.setFormatter(logging.Formatter("%(message)s"))
    level = LOGGER.level
    LOGGER.addHandler(handler)
    LOGGER.setLevel(logging.INFO)
    try:
        yield
    finally:
        LOGGER.setLevel(level)
        LOGGER.removeHandler(handler)
