"""What nvFuser's multi-device tests import from its `tests/python/direct_utils`, for hostir."""

from __future__ import annotations

import torch


def is_pre_ampere() -> bool:
    """Is the GPU older than Ampere (no flash attention there)? False without a GPU: torch's
    flash attention runs on CPUs."""
    return torch.cuda.is_available() and torch.cuda.get_device_capability() < (8, 0)


def create_sdpa_rng_tensors() -> tuple[torch.Tensor, torch.Tensor]:
    """A philox seed and offset as torch's flash attention returns them (uint64 [2] and [])
    on the device of this rank."""
    device = "cuda" if torch.cuda.is_available() else "cpu"
    philox_seed = torch.testing.make_tensor((2,), device=device, dtype=torch.uint64)
    philox_offset = torch.testing.make_tensor((), device=device, dtype=torch.uint64)
    return philox_seed, philox_offset
