"""What the `arith` ops of a host program compute on Python numbers: one definition for the
evaluator (runtime/compile/control_flow.py), which runs them, and for
verify-collective-order (passes/verify_collective_order.py), which reads a program's index
arithmetic rank by rank before it runs, so that both see the same peers, loop bounds and
conditions.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from xdsl.dialects import arith
from xdsl.dialects.builtin import FloatAttr, IntegerAttr, IntegerType
from xdsl.ir import Operation


def _trunc_div(a: int, b: int) -> int:
    q = abs(a) // abs(b)
    return -q if (a < 0) != (b < 0) else q


def _trunc_rem(a: int, b: int) -> int:
    return a - b * _trunc_div(a, b)


BINARY: dict[type[Operation], Callable[[Any, Any], Any]] = {
    arith.AddiOp: lambda a, b: a + b, arith.SubiOp: lambda a, b: a - b, arith.MuliOp: lambda a, b: a * b,
    arith.DivSIOp: _trunc_div, arith.DivUIOp: lambda a, b: a // b, arith.RemSIOp: _trunc_rem,
    arith.RemUIOp: lambda a, b: a % b, arith.FloorDivSIOp: lambda a, b: a // b,
    arith.CeilDivSIOp: lambda a, b: -(-a // b), arith.CeilDivUIOp: lambda a, b: -(-a // b),
    arith.MaxSIOp: max, arith.MinSIOp: min, arith.MaxUIOp: max, arith.MinUIOp: min,
    arith.AndIOp: lambda a, b: a & b, arith.OrIOp: lambda a, b: a | b, arith.XOrIOp: lambda a, b: a ^ b,
    arith.AddfOp: lambda a, b: a + b, arith.SubfOp: lambda a, b: a - b, arith.MulfOp: lambda a, b: a * b,
    arith.DivfOp: lambda a, b: a / b, arith.MaximumfOp: max, arith.MinimumfOp: min,
}
"""The binary ops, by class."""

CASTS: tuple[type[Operation], ...] = (arith.IndexCastOp, arith.ExtSIOp, arith.ExtUIOp, arith.TruncIOp)
"""Casts between integer types: the identity on Python integers."""


def comparison(predicate: int) -> Callable[[Any, Any], bool]:
    """The function of `arith.cmpi`'s predicate (eq ne slt sle sgt sge ult ule ugt uge)."""
    return [
        lambda a, b: a == b, lambda a, b: a != b, lambda a, b: a < b, lambda a, b: a <= b,
        lambda a, b: a > b, lambda a, b: a >= b, lambda a, b: a < b, lambda a, b: a <= b,
        lambda a, b: a > b, lambda a, b: a >= b,
    ][predicate]


def constant_value(op: arith.ConstantOp) -> int | bool | float:
    """The scalar an `arith.constant` holds (a bool for i1); ValueError for anything else."""
    value = op.value
    if isinstance(value, IntegerAttr):
        data = value.value.data
        is_bool = isinstance(value.type, IntegerType) and value.type.width.data == 1
        return bool(data) if is_bool else data
    if isinstance(value, FloatAttr):
        return float(value.value.data)
    raise ValueError(f"constant {value} is not a scalar")
