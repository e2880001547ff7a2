"""Global tensor <-> per-rank shards, for every way a type can be sharded."""

import pytest
import torch

from hostir.runtime.layouts import _as_words, copied_in_allocation_order, shard_tensor, unshard
from hostir_dialect.context import parse_module


def tensor_type(text: str):
    module = parse_module(f"fusion.func @f(%a: !fusion.tensor<{text}>) -> !fusion.tensor<{text}> {{\n"
                          f"  fusion.return %a : !fusion.tensor<{text}>\n}}")
    return module.ops.first.function_type.inputs.data[0]


G = torch.arange(48.0).reshape(8, 6)


@pytest.mark.parametrize("text, world, expected", [
    ("f32[8, 6]", 2, lambda r: G),
    ("f32[2 didx, 6], mesh=[0, 1]", 2, None),
    ("f32[8(2 didx, 4), 6], mesh=[0, 1]", 2, lambda r: G[4 * r: 4 * r + 4]),
    ("f32[8(4, 2 didx), 6], mesh=[0, 1]", 2, lambda r: G[r::2]),
    ("f32[8, 6(2 didx, 3)], mesh=[1, 0]", 2, lambda r: G[:, 3 * (1 - r): 3 * (1 - r) + 3]),
    ("f32[8(2 didy, 4), 6(2 didx, 3)], mesh=[[0, 1], [2, 3]]", 4,
     lambda r: G[4 * (r // 2): 4 * (r // 2) + 4, 3 * (r % 2): 3 * (r % 2) + 3]),
    ("f32[8(2 didx, 4), 6], mesh=[[0, 1], [2, 3]]", 4, lambda r: G[4 * (r % 2): 4 * (r % 2) + 4]),
])
def test_shard_and_unshard_round_trip(text, world, expected):
    t = tensor_type(text)
    g = torch.arange(12.0).reshape(2, 6) if expected is None else G
    expected = expected or (lambda r: g[r: r + 1])
    shards = [shard_tensor(g, t, r) for r in range(world)]
    for r, shard in enumerate(shards):
        assert torch.equal(shard, expected(r)), r
    assert torch.equal(unshard(shards, t), g)


def test_a_rank_outside_the_mesh_gets_none():
    t = tensor_type("f32[8(2 didx, 4), 6], mesh=[1, 2]")
    assert shard_tensor(G, t, 0) is None
    shards = {r: shard_tensor(G, t, r) for r in (1, 2)}
    assert torch.equal(shards[2], G[4:]) and torch.equal(unshard(shards, t), G)


def test_allocation_order_is_realized_as_strides():
    t = tensor_type("f32[8(2 didx, 4), 6], mesh=[0, 1], alloc=[1, 0]")
    shard = shard_tensor(G, t, 1)
    assert torch.equal(shard, G[4:]) and shard.stride() == (1, 4)


def test_a_global_tensor_of_the_wrong_shape_is_refused():
    with pytest.raises(ValueError, match=r"global tensor of shape \[8, 6\] does not fit"):
        shard_tensor(G, tensor_type("f32[4, 6]"), 0)


@pytest.mark.parametrize("text, message", [
    # a whole dynamic device axis holds one element per device: 8 would leave 6 out
    ("f32[? didx, 6], mesh=[0, 1]", r"axis 0 of .* has extent 8, which does not fit its pieces \(2\)"),
    ("f32[8, ?(4 didx, ?)], mesh=[0, 1, 2, 3]", r"axis 1 of .* has extent 6, which does not fit its pieces \(4, \?\)"),
])
def test_a_dynamic_extent_its_pieces_do_not_fit_is_refused(text, message):
    with pytest.raises(ValueError, match=message):
        shard_tensor(G, tensor_type(text), 0)


@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float32, torch.int8, torch.bool, torch.float64, torch.complex64])
@pytest.mark.parametrize("perm", [(1, 0, 2, 3), (2, 0, 1, 3), (0, 1, 3, 2), (3, 2, 1, 0)])
def test_a_copy_into_an_allocation_order_holds_the_value_in_that_order(dtype, perm):
    x = (torch.randn(8, 2, 16, 12) * 10).to(dtype)
    for value in (x, x[:, :, 1:, 1:], x.transpose(0, 1)):
        copied = copied_in_allocation_order(value, perm)
        assert torch.equal(copied, value) and copied.permute(perm).is_contiguous()
        assert copied.untyped_storage().data_ptr() != x.untyped_storage().data_ptr()


def test_a_permuting_copy_moves_8_byte_words_where_the_last_dimension_allows():
    """Its inner dimension contiguous and whole words: copied as int64 (4 bf16 per load);
    otherwise element by element."""
    assert _as_words(torch.zeros(4, 8, dtype=torch.bfloat16).permute(1, 0).permute(1, 0)).shape == (4, 2)
    assert _as_words(torch.zeros(4, 6, dtype=torch.bfloat16)) is None  # 12 bytes a row
    assert _as_words(torch.zeros(8, 4, dtype=torch.bfloat16).t()) is None  # inner stride 8
    assert _as_words(torch.zeros(4, 8, dtype=torch.bfloat16)[:, 1:5]) is None  # starts mid-word
    assert _as_words(torch.zeros(4, 8, dtype=torch.float64)) is None  # already a word
