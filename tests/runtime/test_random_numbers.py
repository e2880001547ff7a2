"""Counter-based random numbers (runtime/random_numbers.py) and the global positions of a
shard's elements (layouts.global_positions): a shard draws the numbers of its positions in
the unsharded tensor."""

import pytest
import torch

from hostir.runtime import random_numbers
from hostir.runtime.layouts import global_linear_index, shard_tensor
from hostir_dialect.context import parse_module


def tensor_type(text: str):
    module = parse_module(f"%t = hir.allocate : !fusion.tensor<{text}>")
    return module.body.block.first_op.result.type


@pytest.mark.parametrize("layout", [
    "f32[4, 6(2 didx, 3)], mesh=[0, 1]",
    "f32[4(2 didx, 2), 6], mesh=[0, 1]",
    "f32[4(2 didy, 2), 6(2 didx, 3)], mesh=[[0, 1], [2, 3]]",
    "f32[4, 6(3, 2 didx)], mesh=[0, 1]",
    "f32[4(2 didz, 2), 6(2 didy, 3)], mesh=[[[0], [1]], [[2], [3]]]",
])
def test_a_shards_positions_are_its_elements_positions_in_the_unsharded_tensor(layout):
    t = tensor_type(layout)
    positions = torch.arange(24).reshape(4, 6)
    for rank in t.mesh.devices:
        local = shard_tensor(positions, t, rank)
        assert torch.equal(global_linear_index(t, rank, list(local.shape), torch.device("cpu")), local)
    assert torch.equal(global_linear_index(t, None, [4, 6], torch.device("cpu")), positions)


def test_uniform_numbers_depend_on_seed_offset_and_position_only():
    positions = torch.arange(100_000)
    numbers = random_numbers.uniform(7, 3, positions)
    assert numbers.dtype == torch.float64 and (numbers >= 0).all() and (numbers < 1).all()
    assert abs(numbers.mean().item() - 0.5) < 0.01 and abs(numbers.var().item() - 1 / 12) < 0.005
    assert torch.equal(random_numbers.uniform(7, 3, positions[500:600]), numbers[500:600])
    assert torch.equal(random_numbers.uniform(7, 4, positions[:-1]), numbers[1:])  # the offset shifts the stream
    assert not torch.equal(random_numbers.uniform(8, 3, positions[:100]), numbers[:100])


def test_default_states_differ_by_stream_and_run_and_follow_torchs_seed():
    torch.manual_seed(5)
    states = {random_numbers.default_state(stream, run) for stream in range(3) for run in range(3)}
    assert len(states) == 9
    again = random_numbers.default_state(1, 2)
    torch.manual_seed(6)
    assert random_numbers.default_state(1, 2) != again


def test_uint64_states_round_trip():
    values = [-5, 2**40]
    state = random_numbers.as_uint64(values, torch.device("cpu"))
    assert state.dtype == torch.uint64 and [int(random_numbers.as_int64(x)) for x in state] == values


@pytest.mark.parametrize(("seed", "offset"), [(-5, 2**63 - 1), (2**64 - 3, 7), (0, -1)])
def test_seeds_held_in_tensors_draw_what_the_same_ints_draw(seed, offset):
    """A draw from tensor seeds (as a CUDA graph captures it) equals the draw from ints."""
    positions = torch.arange(50, dtype=torch.int64)
    held = random_numbers.as_uint64([seed, offset], torch.device("cpu"))
    torch.testing.assert_close(random_numbers.uniform(held[0], held[1], positions),
                               random_numbers.uniform(seed, offset, positions), rtol=0, atol=0)
