"""The tensor type: local (per-rank) shapes, meshes, verifier messages, text round trip."""

from __future__ import annotations

import re

import pytest
from xdsl.context import Context
from xdsl.dialects.builtin import IndexType, f32
from xdsl.parser import Parser
from xdsl.utils.exceptions import ParseError, VerifyException

from hostir_dialect.context import make_context
from hostir_dialect.diagnostics import LocatingParser
from hostir_dialect.tensor_type import (
    DYNAMIC,
    Axis,
    IterKind,
    Mesh,
    ParallelKind,
    Piece,
    TensorDesc,
    TensorType,
)

STREAM, DIDX, DIDY, DIDZ = ParallelKind.STREAM, ParallelKind.DIDX, ParallelKind.DIDY, ParallelKind.DIDZ


def parse(text: str) -> TensorType:
    parsed = Parser(make_context(), f"!fusion.tensor<{text}>").parse_type()
    assert isinstance(parsed, TensorType)
    return parsed


def desc(text: str) -> TensorType:
    """The type whose queries a test checks (TensorType is the one query surface)."""
    return parse(text)


# --------------------------------------------------------------------------- #
# Local shapes: type + rank -> the shape of that rank's buffer
# --------------------------------------------------------------------------- #


@pytest.mark.parametrize(
    ("text", "rank", "expected"),
    [
        ("f32[8, 64]", 0, (8, 64)),
        ("f32[8, 64]", 7, (8, 64)),  # no mesh: every rank holds the whole tensor
        # a logical axis of extent D sharded directly: local extent 1
        ("f32[2 didx, 64], mesh=[0, 1]", 0, (1, 64)),
        ("f32[2 didx, 64], mesh=[0, 1]", 1, (1, 64)),
        ("f32[4, 3 didx], mesh=[5, 6, 7]", 6, (4, 1)),
        # outer split: the outer piece is sharded, the inner piece stays
        ("f32[64(2 didx, 32), 8], mesh=[0, 1]", 1, (32, 8)),
        ("f32[8, 12(3 didx, 4)], mesh=[0, 1, 2]", 2, (8, 4)),
        # 2-D mesh: didy along mesh rows, didx along columns
        ("f32[2 didy, 3 didx, 8], mesh=[[0, 1, 2], [3, 4, 5]]", 4, (1, 1, 8)),
        ("f32[8(2 didy, 4), 6(3 didx, 2)], mesh=[[0, 1, 2], [3, 4, 5]]", 5, (4, 2)),
        ("f32[8, 6(3 didx, 2)], mesh=[[0, 1, 2], [3, 4, 5]]", 0, (8, 2)),
        # a stream axis is whole unless the allocation marks it
        ("f32[8 stream, 64]", 0, (8, 64)),
        ("f32[8 stream, 64], alloc=[0 stream, 1]", 0, (1, 64)),
        ("f32[64(2 didx, 4 stream, 8)], mesh=[0, 1]", 0, (32,)),
        ("f32[64(2 didx, 4 stream, 8)], mesh=[0, 1], alloc=[0 stream]", 0, (8,)),
        ("f32[4 stream, 2 didx], mesh=[0, 1], alloc=[0 stream, 1]", 1, (1, 1)),
        # allocation order permutes the shape
        ("f32[8, 64], alloc=[1, 0]", 0, (64, 8)),
        ("f32[8 stream, 64, 3], alloc=[2, 0 stream, 1]", 0, (3, 1, 64)),
        ("f32[64(2 didx, 32), 8], mesh=[0, 1], alloc=[1, 0]", 0, (8, 32)),
        # reduction axes are never allocated, sharded or not
        ("f32[4, r8]", 0, (4,)),
        ("f32[r8, 4], alloc=[1, 0]", 0, (4,)),
        ("f32[4, r8(2 didx, 4)], mesh=[0, 1]", 1, (4,)),
        ("f32[4 stream, r2, 8], mesh=[0, 1]", 0, (4, 8)),
        # broadcast axes are allocated at extent 1
        ("f32[b1, 8]", 0, (1, 8)),
        # dynamic extents stay dynamic
        ("f32[?, 64]", 0, (DYNAMIC, 64)),
        ("f32[? stream, 64], alloc=[0 stream, 1]", 0, (1, 64)),  # one chunk of a whole axis
        ("f32[? didx, 64], mesh=[0, 1]", 0, (1, 64)),
        ("f32[? stream, 64]", 0, (DYNAMIC, 64)),
        ("f32[?(2 didx, ?), 8], mesh=[0, 1]", 0, (DYNAMIC, 8)),
        ("f32[]", 0, ()),
    ],
)
def test_local_shape(text: str, rank: int, expected: tuple[int, ...]) -> None:
    assert desc(text).local_shape(rank) == expected


@pytest.mark.parametrize(
    ("text", "rank"),
    [
        ("f32[2 didx, 64], mesh=[0, 1]", 2),
        ("f32[8, 64], mesh=[3]", 0),
        ("f32[2 didy, 2 didx], mesh=[[0, 1], [2, 3]]", 4),
    ],
)
def test_rank_outside_the_mesh_holds_no_buffer(text: str, rank: int) -> None:
    assert desc(text).local_shape(rank) is None
    assert not desc(text).is_on_rank(rank)


def test_local_shape_without_a_rank_is_the_members_shape() -> None:
    assert desc("f32[2 didx, 64], mesh=[0, 1]").local_shape() == (1, 64)


def test_local_extent_can_ignore_or_force_stream_sharding() -> None:
    d = desc("f32[8 stream, 64], alloc=[0 stream, 1]")
    assert d.local_extent(0) == 1
    assert d.local_extent(0, stream_sharded=False) == 8
    assert desc("f32[8 stream, 64]").local_extent(0, stream_sharded=True) == 1


def test_queries() -> None:
    d = desc("f32[4 stream, r2, 6(2 didx, 3), b1], mesh=[0, 1]")
    assert d.rank == 4
    assert d.shape == (4, 2, 6, 1)
    assert d.value_shape() == (4, 6, 1)
    assert d.stream_axis() == 0
    assert d.axis_with(DIDX) == 2
    assert d.axis_with(DIDY) is None
    assert d.is_sharded() and d.is_sharded(DIDX) and not d.is_sharded(DIDY)
    assert d.loop_domain() == [
        (0, Piece(4, STREAM)), (1, Piece(2)), (2, Piece(2, DIDX)), (2, Piece(3)), (3, Piece(1)),
    ]
    assert [a.kind for a in d.axes] == [IterKind.ITERATION, IterKind.REDUCTION, IterKind.ITERATION, IterKind.BROADCAST]
    assert d.axes[2].is_split and d.axes[2].parallel_types() == {DIDX}
    assert d.allocation_order() == (0, 1, 2, 3)


def test_a_device_type_on_a_mesh_axis_of_one_device_spreads_nothing() -> None:
    assert desc("f32[4(2 didx, 2), 8], mesh=[0, 1]").is_spread(DIDX)
    one = desc("f32[4(1 didx, 4), 8(2 didy, 4)], mesh=[[0], [1]]")
    assert one.is_sharded(DIDX) and not one.is_spread(DIDX)
    assert one.is_spread() and one.is_spread(DIDY)


def test_a_sharded_reduction_axis_does_not_shard_the_value() -> None:
    d = desc("f32[4, r2 didx], mesh=[0, 1]")
    assert d.axis_with(DIDX) == 1
    assert d.axis_with(DIDX, include_reduction=False) is None
    assert not d.is_sharded()


# --------------------------------------------------------------------------- #
# Mesh
# --------------------------------------------------------------------------- #


def test_1d_mesh() -> None:
    mesh = Mesh.of([4, 5, 6])
    assert (mesh.shape, mesh.size, mesh.ndim) == ((3,), 3, 1)
    assert mesh.axis_of(DIDX) == 0 and mesh.axis_of(DIDY) is None
    assert mesh.axis_size(DIDX) == 3 and mesh.axis_size(DIDY) == 1
    assert mesh.coordinate(6) == (2,)
    assert mesh.index_along(5, DIDX) == 1
    assert mesh.index_along(5, DIDY) == 0
    assert mesh.slice(5, DIDX) == (4, 5, 6)
    assert mesh.slice(5, DIDY) == (5,)
    assert str(mesh) == "[4, 5, 6]"


def test_2d_mesh() -> None:
    mesh = Mesh.of([[0, 1, 2], [3, 4, 5]])
    assert (mesh.shape, mesh.size, mesh.ndim) == ((2, 3), 6, 2)
    # DIDx is the last mesh axis (columns), DIDy the one before (rows)
    assert mesh.axis_of(DIDX) == 1 and mesh.axis_of(DIDY) == 0
    assert mesh.axis_size(DIDX) == 3 and mesh.axis_size(DIDY) == 2
    assert mesh.coordinate(4) == (1, 1)
    assert mesh.coordinate(2) == (0, 2)
    assert mesh.index_along(5, DIDX) == 2 and mesh.index_along(5, DIDY) == 1
    assert mesh.slice(4, DIDX) == (3, 4, 5)  # my row
    assert mesh.slice(4, DIDY) == (1, 4)  # my column
    assert mesh.nested() == [[0, 1, 2], [3, 4, 5]]
    assert str(mesh) == "[[0, 1, 2], [3, 4, 5]]"


def test_3d_mesh() -> None:
    mesh = Mesh.of([[[0, 1], [2, 3]], [[4, 5], [6, 7]]])
    assert (mesh.shape, mesh.size, mesh.ndim) == ((2, 2, 2), 8, 3)
    # DIDz is the first of three mesh axes (nvFuser's mesh_z)
    assert (mesh.axis_of(DIDX), mesh.axis_of(DIDY), mesh.axis_of(DIDZ)) == (2, 1, 0)
    assert mesh.coordinate(6) == (1, 1, 0)
    assert mesh.index_along(6, DIDZ) == 1 and mesh.index_along(6, DIDY) == 1 and mesh.index_along(6, DIDX) == 0
    assert mesh.slice(6, DIDZ) == (2, 6)
    assert mesh.slice(6, DIDX) == (6, 7)
    assert str(mesh) == "[[[0, 1], [2, 3]], [[4, 5], [6, 7]]]"
    assert Mesh.of([0, 1]).axis_of(DIDZ) is None and Mesh.of([[0, 1]]).axis_size(DIDZ) == 1


def test_a_device_type_may_shard_one_reduction_axis_beside_one_iteration_axis() -> None:
    """nvFuser's request for a reduce-scatter: the partial sums stay per device (r8 didx)
    and the result is sharded on axis 1 (the iteration axis comes first in queries)."""
    d = desc("f32[8, 4(2 didx, 2), r8(2 didx, 4)], mesh=[0, 1]")
    assert d.axis_with(DIDX) == 1 and d.axis_with(DIDX, include_reduction=False) == 1
    assert desc("f32[r8(2 didx, 4), 4], mesh=[0, 1]").axis_with(DIDX) == 0
    assert d.local_shape(0) == (8, 2)


def test_2d_mesh_with_unordered_ids() -> None:
    mesh = Mesh.of([[7, 3], [1, 0]])
    assert mesh.coordinate(1) == (1, 0)
    assert mesh.slice(1, DIDX) == (1, 0)
    assert mesh.slice(3, DIDY) == (3, 0)


def test_mesh_rows_of_unequal_length_are_rejected() -> None:
    with pytest.raises(VerifyException, match="2-D device mesh rows must have equal lengths"):
        Mesh.of([[0, 1], [2]])


# --------------------------------------------------------------------------- #
# Verifier messages
# --------------------------------------------------------------------------- #

F8 = Axis(8)


@pytest.mark.parametrize(
    ("tensor", "message"),
    [
        (TensorDesc(IndexType(), (F8,)), "unsupported element type index"),
        (TensorDesc(f32, (F8,), Mesh((), (0,))), "device mesh is empty"),
        (TensorDesc(f32, (F8,), Mesh.of([0, 0])), "duplicate device ids in mesh [0, 0]"),
        (TensorDesc(f32, (F8,), Mesh.of([-1])), "negative device id in mesh [-1]"),
        (TensorDesc(f32, (F8,), Mesh(tuple(range(16)), (2, 2, 2, 2))), "device meshes have at most 3 dimensions"),
        (TensorDesc(f32, (Axis(-3),)), "axis 0 has negative extent -3"),
        (TensorDesc(f32, (F8, Axis(2, IterKind.BROADCAST))), "axis 1 is a broadcast axis of extent 2; broadcast axes have extent 1"),
        (TensorDesc(f32, (Axis(8, pieces=(Piece(DYNAMIC), Piece(8))),)), "axis 0: split factor must be a positive static integer, got ?"),
        (TensorDesc(f32, (Axis(8, pieces=(Piece(-2), Piece(4))),)), "axis 0: split factor must be a positive static integer, got -2"),
        (TensorDesc(f32, (Axis(8, pieces=(Piece(3), Piece(3))),)), "axis 0: split factor 3 does not divide extent 8"),
        (TensorDesc(f32, (Axis(16, pieces=(Piece(2), Piece(2), Piece(3))),)), "axis 0: innermost piece has extent 3 but the split leaves 4"),
        (TensorDesc(f32, (Axis(8, pieces=(Piece(4),)),)), "axis 0: its one loop axis has extent 4, not the axis extent 8"),
        (TensorDesc(f32, (Axis(8, pieces=(Piece(8, STREAM),)), Axis(4, pieces=(Piece(4, STREAM),)))), "2 stream axes; at most one is allowed"),
        (TensorDesc(f32, (Axis(2, pieces=(Piece(2, DIDX),)), Axis(2, pieces=(Piece(2, DIDX),))), Mesh.of([0, 1])), "2 didx axes; at most one is allowed, and one more on a reduction axis"),
        (TensorDesc(f32, (Axis(2, IterKind.REDUCTION, (Piece(2, DIDX),)), Axis(2, IterKind.REDUCTION, (Piece(2, DIDX),))), Mesh.of([0, 1])), "2 didx axes; at most one is allowed, and one more on a reduction axis"),
        (TensorDesc(f32, (Axis(2, pieces=(Piece(2, DIDX),)),)), "didx axis on a tensor without a device mesh"),
        (TensorDesc(f32, (Axis(2, pieces=(Piece(2, DIDY),)),), Mesh.of([0, 1])), "didy axis but mesh [0, 1] has no such axis"),
        (TensorDesc(f32, (Axis(4, pieces=(Piece(4, DIDX),)),), Mesh.of([0, 1])), "didx axis of extent 4 does not match the 2 devices of mesh [0, 1] along it"),
        (TensorDesc(f32, (F8, F8), alloc_order=(1, 1)), "allocation order [1, 1] is not a permutation of the 2 logical axes"),
        (TensorDesc(f32, (F8,), stream_allocated=True), "allocation marks a stream axis but the tensor has none"),
    ],
)
def test_problems(tensor: TensorDesc, message: str) -> None:
    assert list(tensor.problems()) == [message]
    with pytest.raises(VerifyException, match="invalid tensor type: " + message.replace("[", r"\[").replace("?", r"\?")):
        TensorType(tensor).verify()


def test_every_problem_is_reported_most_basic_first() -> None:
    tensor = TensorDesc(IndexType(), (Axis(2, IterKind.BROADCAST), Axis(2, pieces=(Piece(2, DIDX),))))
    assert list(tensor.problems()) == [
        "unsupported element type index",
        "axis 0 is a broadcast axis of extent 2; broadcast axes have extent 1",
        "didx axis on a tensor without a device mesh",
    ]


def test_valid_types_have_no_problems() -> None:
    for text in ROUND_TRIPS:
        assert list(parse(text).data.problems()) == [], text


# --------------------------------------------------------------------------- #
# Text form
# --------------------------------------------------------------------------- #

ROUND_TRIPS = [
    "f32[8, 64]",
    "f32[]",
    "f32[?, r64]",
    "f32[r?, b1]",
    "f32[b1, 64]",
    "f32[8 stream, 64]",
    "f32[? stream, 4]",
    "f32[2 didx, 64], mesh=[0, 1]",
    "f32[2 didy, 2 didx, 8], mesh=[[0, 1], [2, 3]]",
    "f32[512 didx, 8], mesh=[0, ..., 511]",
    "f32[8 didy, 64 didx], mesh=[[0, ..., 63], ..., [448, ..., 511]]",
    "f32[16 didy, 2 didx], mesh=[[512, 513], ..., [542, 543]]",
    "f32[8 didx], mesh=[7, 0, ..., 5, 9]",
    "f32[2 didz, 4(2 didy, 2), 2 didx], mesh=[[[0, 1], [2, 3]], [[4, 5], [6, 7]]]",
    "f32[8, 4(2 didx, 2), r8(2 didx, 4)], mesh=[0, 1]",
    "ui64[2]",
    "f32[2 didz, 8 didx], mesh=[[[0, ..., 7]], [[8, ..., 15]]]",
    "f32[64(2 didx, 32), 8], mesh=[0, 1]",
    "f32[64(2 didx, 4 stream, 8)], mesh=[0, 1]",
    "f32[8(2, 4 stream)]",
    "f32[?(2 didx, ?), 8], mesh=[0, 1]",
    "f32[8, 64], alloc=[1, 0]",
    "f32[8 stream, 64], alloc=[0 stream, 1]",
    "bf16[4 stream, 64(2 didx, 32), 8], mesh=[0, 1], alloc=[2, 0 stream, 1]",
    "f16[2]",
    "f64[2]",
    "i1[2]",
    "i32[2]",
    "i64[2]",
]


@pytest.mark.parametrize("text", ROUND_TRIPS)
def test_text_round_trip(text: str) -> None:
    printed = str(parse(text))
    assert printed == f"!fusion.tensor<{text}>"
    assert parse(printed.removeprefix("!fusion.tensor<").removesuffix(">")) == parse(text)


@pytest.mark.parametrize(
    ("text", "canonical"),
    [
        ("f32[8,64]", "f32[8, 64]"),
        ("f32[8 serial, 4]", "f32[8, 4]"),
        ("f32[8(2 serial, 4)]", "f32[8(2, 4)]"),
        ("f32[8, 4], alloc=[0, 1]", "f32[8, 4]"),
        ("f32[8, 4], alloc=[1, 0], mesh=[0,1]", "f32[8, 4], mesh=[0, 1], alloc=[1, 0]"),
        # a run of five or more ids or rows is elided; fewer are listed
        ("f32[5 didx], mesh=[0, 1, 2, 3, 4]", "f32[5 didx], mesh=[0, ..., 4]"),
        ("f32[4 didx], mesh=[0, ..., 3]", "f32[4 didx], mesh=[0, 1, 2, 3]"),
        ("f32[6 didx], mesh=[0, 1, ..., 4, 5]", "f32[6 didx], mesh=[0, ..., 5]"),
        ("f32[4 didy, 2 didx], mesh=[[0, 1], ..., [6, 7]]", "f32[4 didy, 2 didx], mesh=[[0, 1], [2, 3], [4, 5], [6, 7]]"),
        ("f32[2 didy, 8 didx], mesh=[[0, ..., 7], [8, ..., 15]]", "f32[2 didy, 8 didx], mesh=[[0, ..., 7], [8, ..., 15]]"),
    ],
)
def test_text_is_printed_canonically(text: str, canonical: str) -> None:
    assert str(parse(text)) == f"!fusion.tensor<{canonical}>"


@pytest.mark.parametrize("devices", [1, 2, 8, 64, 512, 1024, 65536])
def test_the_text_of_a_regular_mesh_does_not_grow_with_its_size(devices: int) -> None:
    """A contiguous mesh, 1-D or as square-ish rows, prints in a few characters, which
    its digits alone make grow; and parses back to itself."""
    width = 1 << (devices.bit_length() // 2)
    for mesh in (Mesh.of(list(range(devices))), Mesh.of([list(range(r, r + width)) for r in range(0, devices, width)])):
        text = str(mesh)
        assert len(text) <= 42, text
        assert parse(f"f32[8], mesh={text}").mesh == mesh


@pytest.mark.parametrize(
    ("mesh", "message"),
    [
        ("[..., 3]", "`...` stands for the run between two entries of a mesh"),
        ("[0, ...]", "`...` stands for the run between two entries of a mesh"),
        ("[0, ..., ..., 3]", "`...` stands for the run between two entries of a mesh"),
        ("[3, ..., 1]", "`...` stands for the ids between a device id and a larger one, not 3 and 1"),
        ("[[0, 1], ..., [3, 4]]", "`...` stands for the rows that continue two rows row-major"),
        ("[[0, 2], ..., [8, 10]]", "`...` stands for the rows that continue two rows row-major"),
        ("[[0, 1], 2]", "a device mesh lists device ids or rows of them, not both"),
        ("[0, ..., 9223372036854775806]", "`...` makes a mesh of more than 65536 devices"),
    ],
)
def test_an_elided_mesh_that_stands_for_no_run_is_a_located_parse_error(mesh: str, message: str) -> None:
    with pytest.raises(ParseError, match=re.escape(message)):
        parse(f"f32[4], mesh={mesh}")


def test_a_mesh_larger_than_supported_is_invalid() -> None:
    assert next(TensorDesc(f32, (F8,), Mesh.of(list(range(65537)))).problems()) == (
        "a mesh of 65537 devices; at most 65536 are supported"
    )


def test_parse_errors_are_located_parse_errors() -> None:
    with pytest.raises(ParseError, match="split factor 3 does not divide extent 8"):
        parse("f32[8(3, ?)]")


def test_a_type_parsed_before_is_read_again_the_same_and_only_where_the_dialect_is_known() -> None:
    """LocatingParser reads a tensor type whose text it met before from its record of
    them (parse_known_tensor_type); the type is the one xDSL's path builds, text that
    differs in spacing takes that path, and a context without the fusion dialect still
    refuses it."""
    text = "!fusion.tensor<f32[4 stream, 8(2 didx, 4)], mesh=[0, 1]>"
    first = LocatingParser(make_context(), text, "a").parse_type()
    again = LocatingParser(make_context(), text, "b").parse_type()
    spaced = LocatingParser(make_context(), text.replace("<", " <", 1), "c").parse_type()
    assert again == first == spaced == Parser(make_context(), text).parse_type()
    with pytest.raises(ParseError, match="'fusion.tensor' is not registered"):
        LocatingParser(Context(), text, "d").parse_type()


def test_python_construction_matches_the_text() -> None:
    built = TensorType.of(
        f32,
        [Axis(4, pieces=(Piece(4, STREAM),)), Axis(64, pieces=(Piece(2, DIDX), Piece(32))), 8],
        mesh=Mesh.of([0, 1]),
        alloc_order=[2, 0, 1],
        stream_allocated=True,
    )
    assert built == parse("f32[4 stream, 64(2 didx, 32), 8], mesh=[0, 1], alloc=[2, 0 stream, 1]")
    # an identity allocation order is normalized away, so equal types compare equal
    assert TensorType.of(f32, [8, 4], alloc_order=[0, 1]) == parse("f32[8, 4]")
    assert parse("f32[8, 4], alloc=[1, 0]").with_(alloc_order=(0, 1)) == parse("f32[8, 4]")
    assert parse("f32[8, 4]").with_(mesh=Mesh.of([3])) == parse("f32[8, 4], mesh=[3]")


def test_axis_helpers() -> None:
    axis = Axis(64, pieces=(Piece(2, DIDX), Piece(32)))
    assert axis.unparallelized() == Axis(64)
    assert axis.with_serial({DIDX}) == Axis(64) and axis.with_serial({STREAM}) == axis
    sequence = Axis(64, pieces=(Piece(2, STREAM), Piece(2, DIDX), Piece(16)))  # (2 stream, 2 didx, 16)
    assert sequence.with_serial({DIDX}) == Axis(64, pieces=(Piece(2, STREAM), Piece(32)))
    assert sequence.with_serial({STREAM}) == Axis(64, pieces=(Piece(2), Piece(2, DIDX), Piece(16)))
    assert Axis(4, pieces=(Piece(4, DIDX),)).with_serial({STREAM}) == Axis(4, pieces=(Piece(4, DIDX),))
    assert axis.with_kind(IterKind.REDUCTION).is_reduction
    assert Axis(8).pieces == (Piece(8),)
    assert DIDX.is_device and DIDY.is_device and not STREAM.is_device
