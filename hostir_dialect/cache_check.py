"""The rule of hostir's caches, checked on demand (docs/architecture.md, "Caches").

A cache keyed by what an answer reads (`fusion.ShapeTable` by `shape_of(op)`,
stream-parallel-type's `ChunkChecks`) is right only if the answer depends on nothing
outside its key: a question that also read an operand's producer, the op's place or a
pass's state would get another op's answer, silently. With `HOSTIR_CHECK_CACHES=1` in
the environment (the lit suite sets it; `HOSTIR_CHECK_CACHES=1 python -m pytest` checks
the whole suite), every answer found in a cache is worked out again and compared, and a
difference raises `StaleCacheError`, naming the question and the op.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import Any

VARIABLE = "HOSTIR_CHECK_CACHES"

CHECKING = os.environ.get(VARIABLE) == "1"
"""Read once, at import: the caches ask it on every hit."""


class StaleCacheError(AssertionError):
    """A cached answer differs from the one worked out again: the question reads
    something its key does not hold."""


def recheck(cached: Any, question: Callable[..., Any], *args: Any) -> None:
    """Work `question(*args)` out again and compare it with `cached`, the answer a cache
    holds for the key of `args`."""
    try:
        fresh = question(*args)
    except Exception as error:  # noqa: BLE001 -- any failure is a difference
        fresh = error
    if fresh != cached:
        raise StaleCacheError(
            f"{question.__qualname__} of {_described(args[0])}: the cache holds {cached!r} for its key, "
            f"but worked out again it is {fresh!r}; the question reads something its key does not hold"
        )


def _described(subject: Any) -> str:
    name = getattr(subject, "name", None)
    return f"an op '{name}'" if isinstance(name, str) else repr(subject)
