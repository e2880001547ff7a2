"""passes/chunking.py: the two ways a loop takes chunks of a tensor along an axis."""

import pytest
from xdsl.parser import Parser

from hostir.passes.chunking import SELECTED, Narrowed, narrowed_type
from hostir_dialect.context import make_context
from hostir_dialect.tensor_type import TensorType


def t(text: str) -> TensorType:
    parsed = Parser(make_context(), f"!fusion.tensor<{text}>").parse_type()
    assert isinstance(parsed, TensorType)
    return parsed


@pytest.mark.parametrize("whole, axis, parts, chunk", [
    ("f32[12(3 stream, 4), 5]", 0, 3, "f32[4, 5]"),
    ("f32[?(3 stream, ?), 2]", 0, 3, "f32[?, 2]"),
    ("f32[2 didx, 6(2 stream, 3)], mesh=[0, 1]", 1, 2, "f32[2 didx, 3], mesh=[0, 1]"),
    # devices share the axis inside its chunks: each keeps its part of each chunk
    ("f32[16(2 stream, 2 didx, 4), 8], mesh=[0, 1]", 0, 2, "f32[8(2 didx, 4), 8], mesh=[0, 1]"),
    ("f32[16(4, 2 didx, 2), 8], mesh=[0, 1]", 0, 2, "f32[8(2, 2 didx, 2), 8], mesh=[0, 1]"),
])
def test_a_narrowed_chunk_keeps_the_axis(whole, axis, parts, chunk):
    assert narrowed_type(t(whole), axis, parts) == t(chunk)
    assert Narrowed(parts).type(t(whole), axis) == t(chunk) and Narrowed(parts).takes(t(whole), axis)


def test_a_chunk_that_is_no_block_of_each_devices_part_is_not_taken():
    sharded, odd = t("f32[8(2 didx, 4), 3], mesh=[0, 1]"), t("f32[12(3, 2 didx, 2)], mesh=[0, 1]")
    assert sharded.axes[0].narrowing_problem(2) == "is sharded across devices"
    assert odd.axes[0].narrowing_problem(2) == "is shared by devices inside an outer piece that 2 parts do not divide"
    assert not Narrowed(2).takes(sharded, 0) and not Narrowed(2).takes(odd, 0)
    assert not Narrowed(2).takes(t("f32[4, r8]"), 1)  # a reduction axis has no storage
    assert not SELECTED.takes(sharded, 0) and SELECTED.takes(sharded, 1)


def test_a_selected_chunk_lacks_the_axis():
    assert SELECTED.type(t("f32[4 stream, 8], alloc=[1, 0 stream]"), 0) == t("f32[8]")
    assert SELECTED.trip_count is None and Narrowed(3).trip_count == 3
