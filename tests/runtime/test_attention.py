"""Attention kernels (runtime/attention.py): torch's fused flash attention where it
applies, the math elsewhere, forward and backward, against torch's own attention."""

import pytest
import torch

from hostir.runtime.attention import Attention


def operands(dtype=torch.float32, length=8, keys=8):
    torch.manual_seed(0)
    shape = (2, 3, length, 16)
    q = torch.randn(shape, dtype=dtype)
    k, v = (torch.randn(2, 3, keys, 16, dtype=dtype) for _ in range(2))
    return q, k, v, torch.randn(shape, dtype=dtype)


def torch_attention(q, k, v, g, causal, scale):
    inputs = [x.clone().requires_grad_() for x in (q, k, v)]
    out = torch.nn.functional.scaled_dot_product_attention(*inputs, is_causal=causal, scale=scale)
    return out.detach(), torch.autograd.grad(out, inputs, g)


@pytest.mark.parametrize("causal", [True, False])
@pytest.mark.parametrize("scale", [None, 0.5])
def test_the_fused_and_the_math_path_compute_torchs_attention(causal, scale):
    q, k, v, g = operands()
    want, grads = torch_attention(q, k, v, g, causal, scale)
    fused = Attention(0.0, causal, scale)
    assert fused.fused(q)
    out, lse = fused.forward(q, k, v, None)
    torch.testing.assert_close(out, want)
    for got, expected in zip(fused.backward(g, q, k, v, out, lse, None), grads):
        torch.testing.assert_close(got, expected, rtol=1e-4, atol=1e-4)
    math = Attention(0.0, causal, scale)
    math_out, math_lse = math._math(q, k, v, None)
    torch.testing.assert_close(math_out, want)
    torch.testing.assert_close(math_lse.float(), lse)


def test_dropout_scales_the_kept_weights_and_the_backward_uses_the_same_mask():
    q, k, v, g = operands()
    attention = Attention(0.5, False, None)
    assert not attention.fused(q)
    keep = torch.rand(2, 3, 8, 8, generator=torch.Generator().manual_seed(1)) >= 0.5
    out, _ = attention.forward(q, k, v, keep)
    inputs = [x.clone().requires_grad_() for x in (q, k, v)]
    weights = torch.softmax(inputs[0] @ inputs[1].transpose(-2, -1) / 4.0, -1) * keep / 0.5
    want = weights @ inputs[2]
    torch.testing.assert_close(out, want.detach())
    grads = torch.autograd.grad(want, inputs, g)
    for got, expected in zip(attention.backward(g, q, k, v, out, None, keep), grads):
        torch.testing.assert_close(got, expected)


def test_half_precision_keeps_its_type_and_logsumexp_is_float32():
    q, k, v, g = operands(torch.bfloat16)
    out, lse = Attention(0.0, True, None).forward(q, k, v, None)
    assert out.dtype == torch.bfloat16 and lse.dtype == torch.float32


def test_operands_laid_out_across_their_last_axis_are_made_dense_for_the_fused_kernel():
    """torch's flash kernels assume a unit stride along the head size (the differential
    tester found a key laid out transposed giving another logsumexp)."""
    from hostir.runtime.attention import batched

    q, k, v, g = operands()
    transposed = k.transpose(-1, -2).contiguous().transpose(-1, -2)
    want, _ = torch_attention(q, k, v, g, True, None)
    out, _ = Attention(0.0, True, None).forward(batched(q), batched(transposed), batched(v), None)
    torch.testing.assert_close(out, want)
