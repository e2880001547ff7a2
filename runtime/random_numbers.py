"""Random numbers that do not depend on how a tensor is sharded: the number at position p
of the unsharded tensor is a hash of (seed, offset + p) (splitmix64, computed on int64
tensors, so on any device), so every rank computes its shard of what one device would.

Random ops without explicit seeds draw with `default_state(stream, run)`: torch's initial
seed (the same on every rank that seeded torch alike, and fixed by default) mixed with the
op's stream number, and an offset of `run << 40` for the op's run-th run, so that each run
draws new numbers and ranks agree without communicating.
"""

from __future__ import annotations

import torch

_GOLDEN = -7046029254386353131  # 0x9E3779B97F4A7C15 as int64
_M1 = -4658895280553007687  # 0xBF58476D1CE4E5B9
_M2 = -7723592293110705685  # 0x94D049BB133111EB
RUN_STRIDE_BITS = 40
"""Each run of a random op without a seed starts 2**40 numbers after the last."""


def _shift_right(z: torch.Tensor, bits: int) -> torch.Tensor:
    """A logical shift of int64 values (torch shifts arithmetically)."""
    return (z >> bits) & ((1 << (64 - bits)) - 1)


def _mix(z: torch.Tensor) -> torch.Tensor:
    z = (z ^ _shift_right(z, 30)) * _M1
    z = (z ^ _shift_right(z, 27)) * _M2
    return z ^ _shift_right(z, 31)


def _wrapped(value: int) -> int:
    """An integer as the int64 of its low 64 bits."""
    value &= (1 << 64) - 1
    return value - (1 << 64) if value >= 1 << 63 else value


def uniform(seed: int | torch.Tensor, offset: int | torch.Tensor, positions: torch.Tensor) -> torch.Tensor:
    """Float64 numbers uniform in [0, 1), one per int64 position. `seed` and `offset` may be
    Python ints or one-element integer tensors (uint64 read as the int64 of the same bits):
    tensors stay on the device, so a CUDA graph can capture the draw."""
    counters = positions + as_int64(offset) + 1
    z = _mix(counters * _GOLDEN + as_int64(seed))
    return _shift_right(z, 11).to(torch.float64) * 2.0**-53


def as_int64(value: int | torch.Tensor) -> int | torch.Tensor:
    """An int as the int64 of its low 64 bits; a tensor as int64 (uint64 reinterpreted,
    since torch has little uint64 arithmetic; int64 arithmetic wraps as uint64 would)."""
    if not isinstance(value, torch.Tensor):
        return _wrapped(value)
    return value.view(torch.int64) if value.dtype == torch.uint64 else value.to(torch.int64)


def default_state(stream: int, run: int) -> tuple[int, int]:
    """(seed, offset) of a random op without explicit ones, on its run-th run."""
    mixed = _mix(torch.tensor(_wrapped(torch.initial_seed() + (stream + 1) * _GOLDEN), dtype=torch.int64))
    return int(mixed), run << RUN_STRIDE_BITS


def as_uint64(values: list[int], device: torch.device) -> torch.Tensor:
    """A uint64 tensor of integers given as Python ints (negative ones as their low 64 bits)."""
    return torch.tensor([v & ((1 << 64) - 1) for v in values], dtype=torch.uint64, device=device)
