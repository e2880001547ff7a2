"""Scaled dot-product attention for `fusion.sdpfa_fwd` and `fusion.sdpfa_bwd`: torch's
fused kernels where they compute exactly what the op says, else the math.

Without dropout, torch's flash attention runs: `_scaled_dot_product_flash_attention` on
CUDA (half precision), `_scaled_dot_product_flash_attention_for_cpu` on CPU, forward and
backward. With dropout the math runs (in float32, float64 for float64 inputs), its mask
drawn from the global position of each attention weight (runtime/random_numbers.py), so
the heads a rank holds drop what one device would drop, and the backward replays it from
the forward's seed and offset; the backward differentiates the math with autograd.

Operands are [N.., H, L, E] (batch axes N..); kernels see them as [B, H, L, E].
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch

from . import random_numbers

FLASH_DTYPES = (torch.float16, torch.bfloat16)
"""What torch's CUDA flash attention computes in."""


@dataclass(frozen=True)
class Attention:
    """The attention an op computes: softmax(q k^T * scale (+ causal mask)) v, with dropout."""

    dropout_p: float
    is_causal: bool
    scale: float | None

    def scale_for(self, q: torch.Tensor) -> float:
        return self.scale if self.scale is not None else 1.0 / math.sqrt(q.shape[-1])

    def fused(self, q: torch.Tensor) -> bool:
        """Can torch's flash kernel compute it (no dropout, a device and dtype it runs on)?"""
        if self.dropout_p:
            return False
        return q.device.type == "cpu" or (q.dtype in FLASH_DTYPES and q.shape[-1] % 8 == 0 and q.shape[-1] <= 256)

    def forward(self, q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, mask: torch.Tensor | None) -> tuple[torch.Tensor, torch.Tensor]:
        """(output, logsumexp f32) of 4-D operands."""
        if self.fused(q):
            if q.device.type == "cpu":
                out, lse = torch.ops.aten._scaled_dot_product_flash_attention_for_cpu(
                    q, k, v, 0.0, self.is_causal, scale=self.scale)
            else:
                out, lse, *_ = torch.ops.aten._scaled_dot_product_flash_attention(
                    q, k, v, 0.0, self.is_causal, False, scale=self.scale)
            return out, lse.float()
        out, lse = self._math(q, k, v, mask)
        return out.to(q.dtype), lse.float()

    def backward(self, grad: torch.Tensor, q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, out: torch.Tensor,
                 lse: torch.Tensor, mask: torch.Tensor | None) -> tuple[torch.Tensor, ...]:
        """(grad q, grad k, grad v) of 4-D operands."""
        if self.fused(q):
            if q.device.type == "cpu":
                return torch.ops.aten._scaled_dot_product_flash_attention_for_cpu_backward(
                    grad, q, k, v, out, lse.to(torch.float64 if q.dtype == torch.float64 else torch.float32),
                    0.0, self.is_causal, scale=self.scale)
            no_state = torch.zeros(2, dtype=torch.uint64, device=q.device)
            # None: the undefined cumulative sequence lengths of a batch of equal lengths, as
            # the forward returns them (an empty tensor would be taken for varlen's, int32).
            return torch.ops.aten._scaled_dot_product_flash_attention_backward(
                grad, q, k, v, out, lse, None, None, q.shape[-2], k.shape[-2], 0.0, self.is_causal,
                no_state, torch.empty(0, dtype=torch.uint64, device=q.device), scale=self.scale)[:3]
        with torch.enable_grad():
            inputs = [x.detach().requires_grad_() for x in (q, k, v)]
            result, _ = self._math(inputs[0], inputs[1], inputs[2], mask)
            grads = torch.autograd.grad(result, inputs, grad.to(result.dtype))
        return tuple(g.to(x.dtype) for g, x in zip(grads, (q, k, v)))

    def _math(self, q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, mask: torch.Tensor | None) -> tuple[torch.Tensor, torch.Tensor]:
        compute = torch.float64 if q.dtype == torch.float64 else torch.float32
        scores = (q.to(compute) @ k.to(compute).transpose(-2, -1)) * self.scale_for(q)
        if self.is_causal:  # torch's is_causal: query i sees keys j <= i
            lower = torch.ones(scores.shape[-2:], dtype=torch.bool, device=q.device).tril()
            scores = scores.masked_fill(~lower, float("-inf"))
        lse = torch.logsumexp(scores, dim=-1)
        weights = torch.exp(scores - lse.unsqueeze(-1))
        if mask is not None:
            weights = weights * mask / (1.0 - self.dropout_p)
        return weights @ v.to(compute), lse


def dropout_keep(attention: Attention, seed: int | torch.Tensor, offset: int | torch.Tensor, positions: torch.Tensor) -> torch.Tensor | None:
    """Which attention weights survive dropout, from their global positions (None: no dropout)."""
    if not attention.dropout_p:
        return None
    return random_numbers.uniform(seed, offset, positions) >= attention.dropout_p


def batched(x: torch.Tensor) -> torch.Tensor:
    """[N.., H, L, E] as [B, H, L, E] (a view where the batch axes allow one), dense along
    its last axis: torch's fused kernels assume it (its scaled_dot_product_attention makes
    it so before calling them)."""
    x = x.reshape(-1, *x.shape[-3:])
    return x if x.stride(-1) == 1 else x.contiguous()
