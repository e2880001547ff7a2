"""Builtin attributes the dialects build over and over, each built once.

Building an `IntegerAttr` of width 64 builds and verifies its type, its value and itself
(about 50 µs); the passes build one for every `hir.alias_select` of every loop. Attributes
are immutable values, so ops share one instance, as they share xDSL's `i64`.
"""

from __future__ import annotations

import functools

from xdsl.dialects.builtin import IndexType, IntegerAttr, i64

INDEX = IndexType()
"""The index type (a loop's index, a bound, a stream key), built once as xDSL's `i64` is."""


@functools.lru_cache(maxsize=1024)
def i64_attr(value: int) -> IntegerAttr:
    return IntegerAttr(value, i64)


@functools.lru_cache(maxsize=1024)
def index_attr(value: int) -> IntegerAttr:
    return IntegerAttr(value, INDEX)
