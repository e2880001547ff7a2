"""Hand-written host programs on one rank, mirroring nvFuser's tests/cpp/test_host_irs.cpp."""

from __future__ import annotations

import warnings

import pytest
import torch

from hostir.runtime import Evaluator, ExecutionError, InputError, execute, run_fusion
from hostir.runtime.compile import MAX_NUMBER_OF_STREAMS
from hostir_dialect.context import parse_module
from hostir_dialect.diagnostics import HostIRError
from hostir_dialect.fusion import ARITHMETIC_FUNCTIONS, COMPARISON_FUNCTIONS

F = "!fusion.tensor<f32[8, 64]>"
B = "!fusion.tensor<i1[8, 64]>"
TORCH_BINARY = {
    "add": torch.add, "sub": torch.sub, "mul": torch.mul, "div": torch.div, "maximum": torch.maximum,
    "minimum": torch.minimum, "pow": torch.pow, "eq": torch.eq, "ne": torch.ne, "lt": torch.lt,
    "le": torch.le, "gt": torch.gt, "ge": torch.ge,
}


def inputs(*shapes, seed=1):
    generator = torch.Generator().manual_seed(seed)
    return [torch.randn(s, generator=generator) for s in shapes]


def program(body: str, args: str, results: str) -> str:
    return f"hir.program @main({args}) -> ({results}) {{\n{body}\n}}"


# -- Set, binary ops, reduction: with and without pre-allocated outputs --------


def test_set_without_preallocated_output_copies():
    (a,) = inputs((8, 64))
    m = parse_module(program(f"%b = fusion.set %a : {F} -> {F}\n hir.return %b : {F}", f"%a: {F}", F))
    (b,) = execute(m, [a])
    assert torch.equal(b, a) and b.data_ptr() != a.data_ptr()


def test_set_into_preallocated_output():
    (a,) = inputs((8, 64))
    out = torch.zeros(8, 64)
    m = parse_module(program(f"%b = fusion.set %a into %o : {F} -> {F}\n hir.return %b : {F}", f"%a: {F}, %o: {F}", F))
    (b,) = execute(m, [a, out])
    assert b is out and torch.equal(out, a)


@pytest.mark.parametrize("name", ARITHMETIC_FUNCTIONS + COMPARISON_FUNCTIONS)
@pytest.mark.parametrize("preallocated", [False, True])
def test_binary(name, preallocated):
    a, b = inputs((8, 64), (8, 64))
    if name == "pow":
        a = a.abs()
    result = B if name in COMPARISON_FUNCTIONS else F
    into = " into %o" if preallocated else ""
    args = f"%a: {F}, %b: {F}" + (f", %o: {result}" if preallocated else "")
    m = parse_module(program(f"%c = fusion.{name} %a, %b{into} : {F}, {F} -> {result}\n hir.return %c : {result}",
                             args, result))
    given = [a, b] + ([torch.empty(8, 64, dtype=torch.bool if result == B else torch.float32)] if preallocated else [])
    (c,) = execute(m, given)
    torch.testing.assert_close(c, TORCH_BINARY[name](a, b), equal_nan=True)
    if preallocated:
        assert c is given[2]


@pytest.mark.parametrize("preallocated", [False, True])
def test_sum_reduction(preallocated):
    (a,) = inputs((8, 64))
    R = "!fusion.tensor<f32[8, r64]>"
    into = " into %o" if preallocated else ""
    args = f"%a: {F}" + (f", %o: {R}" if preallocated else "")
    m = parse_module(program(f"%c = fusion.reduce sum %a dims [1]{into} : {F} -> {R}\n hir.return %c : {R}", args, R))
    given = [a] + ([torch.empty(8)] if preallocated else [])
    (c,) = execute(m, given)
    torch.testing.assert_close(c, a.sum(1))
    if preallocated:
        assert c is given[1]


def test_scalar_operands_on_either_side():
    (a,) = inputs((8, 64))
    body = f"""
    %two = arith.constant 2.0 : f32
    %x = fusion.sub %two, %a : f32, {F} -> {F}
    %y = fusion.div %a, %two : {F}, f32 -> {F}
    %z = fusion.maximum %a, %two : {F}, f32 -> {F}
    hir.return %x, %y, %z : {F}, {F}, {F}"""
    x, y, z = execute(parse_module(program(body, f"%a: {F}", f"{F}, {F}, {F}")), [a])
    torch.testing.assert_close(x, 2 - a)
    torch.testing.assert_close(y, a / 2)
    torch.testing.assert_close(z, a.clamp_min(2))


# -- views and allocation -------------------------------------------------------


def test_alias_select_is_a_view():
    T, R = "!fusion.tensor<f32[32, 32]>", "!fusion.tensor<f32[32]>"
    body = f"""
    %i = arith.constant 3 : index
    %v = hir.alias_select %t[%i] axis 1 : {T} -> {R}
    %zero = arith.constant 0.0 : f32
    %w = fusion.mul %v, %zero into %v : {R}, f32 -> {R}
    hir.return %v : {R}"""
    (t,) = inputs((32, 32))
    original = t.clone()
    (v,) = execute(parse_module(program(body, f"%t: {T}", R)), [t])
    assert v.data_ptr() == t[:, 3].data_ptr()
    assert torch.equal(t[:, 3], torch.zeros(32)) and torch.equal(t[:, :3], original[:, :3])


def test_alias_select_forces_index_zero_on_a_broadcast_axis_and_skips_reduction_axes():
    T, R = "!fusion.tensor<f32[r4, b1, 8]>", "!fusion.tensor<f32[r4, 8]>"
    body = f"""
    %i = arith.constant 5 : index
    %v = hir.alias_select %t[%i] axis 1 : {T} -> {R}
    hir.return %v : {R}"""
    t = torch.arange(8.0).reshape(1, 8)
    (v,) = execute(parse_module(program(body, f"%t: {T}", R)), [t])
    assert torch.equal(v, t[0])


def test_allocate_inside_a_loop_allocates_once(monkeypatch):
    T, R = "!fusion.tensor<f32[4, 4]>", "!fusion.tensor<f32[4]>"
    body = f"""
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c4 = arith.constant 4 : index
    scf.for %i = %c0 to %c4 step %c1 {{
      %buf = hir.allocate : {T}
      %row = hir.alias_select %buf[%i] axis 0 : {T} -> {R}
      %x = hir.alias_select %src[%i] axis 0 : {T} -> {R}
      %r = fusion.set %x into %row : {R} -> {R}
      %o = fusion.set %buf into %acc : {T} -> {T}
    }}
    hir.return %acc : {T}"""
    calls = []
    real_empty = torch.empty
    monkeypatch.setattr(torch, "empty", lambda *a, **k: calls.append(a) or real_empty(*a, **k))
    evaluator = Evaluator(parse_module(program(body, f"%src: {T}, %acc: {T}", T)))
    (src,) = inputs((4, 4))
    (acc,) = evaluator.run([src, torch.zeros(4, 4)])
    assert len(calls) == 1
    assert torch.equal(acc, src)  # every row landed in the one buffer


def test_deallocate_drops_the_binding_and_a_later_write_is_refused():
    # Freed in the loop body: the second iteration writes into a buffer that is gone (a
    # use after the deallocate in program order is the verifier's to refuse).
    body = f"""
    %o = hir.allocate : {F}
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c2 = arith.constant 2 : index
    scf.for %i = %c0 to %c2 step %c1 {{
      %c = fusion.add %a, %a into %o : {F}, {F} -> {F}
      hir.deallocate %o : {F}
    }}
    hir.return %a : {F}"""
    with pytest.raises(ExecutionError, match=r"'fusion.add' op failed: destination %o is not bound"):
        execute(parse_module(program(body, f"%a: {F}", F)), inputs((8, 64)))


def test_deallocate_frees_the_buffer_even_when_a_result_written_into_it_is_unused(monkeypatch):
    """The result of `fusion.add ... into %o` aliases %o; deallocating %o must drop that
    alias too, or the memory stays alive until the value is overwritten (with bounded
    stream intermediates: one extra chunk per loop)."""
    import weakref

    buffers, alive_at_next_allocation = [], []
    real_empty = torch.empty

    def tracking_empty(*args, **kwargs):
        alive_at_next_allocation.extend(ref() is not None for ref in buffers)
        buffer = real_empty(*args, **kwargs)
        buffers.append(weakref.ref(buffer))
        return buffer

    monkeypatch.setattr(torch, "empty", tracking_empty)
    body = f"""
    %o = hir.allocate : {F}
    %c = fusion.add %a, %a into %o : {F}, {F} -> {F}
    hir.deallocate %o : {F}
    %p = hir.allocate : {F}
    %r = fusion.neg %a into %p : {F} -> {F}
    hir.return %r : {F}"""
    Evaluator(parse_module(program(body, f"%a: {F}", F))).run(inputs((8, 64)))
    assert alive_at_next_allocation == [False], "the deallocated buffer is still referenced"


def test_allocation_order_is_realized_as_strides():
    T = "!fusion.tensor<f32[4, 6], alloc=[1, 0]>"
    m = parse_module(program(f"%o = hir.allocate : {T}\n hir.return %o : {T}", "", T))
    (o,) = execute(m, [])
    assert o.shape == (4, 6) and o.stride() == (1, 4)


# -- post_on_stream -----------------------------------------------------------------

X, S = "!fusion.tensor<f32[4, 8, 32]>", "!fusion.tensor<f32[r4, 8, 32]>"
UNIT = f"""
fusion.func @unit(%x: {X}) -> ({S}, {X}) {{
  %d = fusion.add %x, %x : {X}, {X} -> {X}
  %s = fusion.reduce sum %d dims [0] : {X} -> {S}
  %r = fusion.relu %d : {X} -> {X}
  fusion.return %s, %r : {S}, {X}
}}"""


def test_post_on_stream_of_a_multi_op_unit_into_fresh_buffers():
    body = f"""
    %s, %r = hir.post_on_stream @unit(%x) : ({X}) -> ({S}, {X})
    hir.return %s, %r : {S}, {X}"""
    (x,) = inputs((4, 8, 32))
    s, r = execute(parse_module(program(body, f"%x: {X}", f"{S}, {X}") + UNIT), [x])
    torch.testing.assert_close(s, (2 * x).sum(0))
    torch.testing.assert_close(r, torch.relu(2 * x))


def test_post_on_stream_writes_into_its_outs():
    body = f"""
    %s, %r = hir.post_on_stream @unit(%x) outs(%os, %or : {S}, {X}) : ({X}) -> ({S}, {X})
    hir.return %s, %r : {S}, {X}"""
    (x,) = inputs((4, 8, 32))
    out_s, out_r = torch.empty(8, 32), torch.empty(4, 8, 32)
    s, r = execute(parse_module(program(body, f"%x: {X}, %os: {S}, %or: {X}", f"{S}, {X}") + UNIT), [x, out_s, out_r])
    assert s is out_s and r is out_r
    torch.testing.assert_close(out_s, (2 * x).sum(0))
    torch.testing.assert_close(out_r, torch.relu(2 * x))


def test_post_on_stream_accumulating_in_place_in_a_loop():
    T = "!fusion.tensor<f32[8, 32]>"
    body = f"""
    %c1 = arith.constant 1 : index
    %c7 = arith.constant 7 : index
    %c2 = arith.constant 2 : index
    scf.for %i = %c1 to %c7 step %c2 {{
      %r = hir.post_on_stream @accumulate(%acc, %x) outs(%acc : {T}) : ({T}, {T}) -> {T}
    }}
    hir.return %acc : {T}
    }}
    fusion.func @accumulate(%acc: {T}, %x: {T}) -> {T} {{
      %twice = fusion.add %x, %x : {T}, {T} -> {T}
      %y = fusion.add %acc, %twice : {T}, {T} -> {T}
      fusion.return %y : {T}"""
    (x,) = inputs((8, 32))
    acc = torch.ones(8, 32)
    (r,) = execute(parse_module(program(body, f"%acc: {T}, %x: {T}", T)), [acc, x])
    assert r is acc
    torch.testing.assert_close(acc, 1 + 6 * x)


# -- streams ---------------------------------------------------------------------


def test_streams_by_key_are_cached_and_set_get_synchronize_keep_the_books():
    body = """
    %user = hir.get_current_stream
    %k2 = arith.constant 2 : index
    %k3 = arith.constant 3 : index
    %s2 = hir.stream %k2
    %s2b = hir.stream %k2
    %s3 = hir.stream %k3
    hir.set_current_stream %s2
    hir.synchronize %user
    hir.set_current_stream %s3
    hir.synchronize %s2b
    hir.set_current_stream %user
    hir.synchronize %s3
    hir.return"""
    evaluator = Evaluator(parse_module(program(body, "", "")))
    evaluator.run([])
    streams = evaluator.streams
    assert streams.keys == [2, 3]
    s2, s3 = streams.get(2), streams.get(3)
    assert s2.waited_for == [streams.default.id] and s3.waited_for == [s2.id]
    assert streams.default.waited_for == [s3.id]
    assert streams.current() is streams.default


def test_a_stream_key_beyond_the_number_of_streams_is_refused_at_its_op():
    # Regression (issue 31, defect 4): a loop over 10**8 keys created 10**8 streams.
    body = """
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %n = arith.constant 100000000 : index
    scf.for %i = %c0 to %n step %c1 {
      %w = hir.stream %i
      hir.set_current_stream %w
    }
    hir.return"""
    evaluator = Evaluator(parse_module(program(body, "", ""), "keys.mlir"), number_of_streams=3)
    with pytest.raises(ExecutionError, match=r"^keys.mlir:7:7: error: 'hir.stream' op failed: stream key 3 is "
                                             r"outside the run's 3 streams \(keys 0 to 2\)"):
        evaluator.run([])
    assert evaluator.streams.keys == [0, 1, 2]


@pytest.mark.parametrize("count, bound", [(0, "at least 1"), (MAX_NUMBER_OF_STREAMS + 1, "at most 64"),
                                          (10**9, "at most 64")])
def test_a_number_of_streams_out_of_bounds_is_refused(count, bound):
    with pytest.raises(ValueError, match=f"number_of_streams must be {bound}, got {count}"):
        Evaluator(parse_module(program("    hir.return", "", "")), number_of_streams=count)


@pytest.mark.parametrize("count", [0, 9])
def test_a_number_of_copy_engine_streams_out_of_bounds_is_refused(count):
    with pytest.raises(ValueError, match=f"copy_engine_streams must be from 1 to 8, got {count}"):
        Evaluator(parse_module(program("    hir.return", "", "")), copy_engine_streams=count)


LOOP = f"""
    %user = hir.get_current_stream
    %n = hir.number_of_streams
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c8 = arith.constant 8 : index
    scf.for %i = %c0 to %c8 step %c1 {{
      %k = arith.remsi %i, %n : index
      %s = hir.stream %k
      hir.set_current_stream %s
      hir.synchronize %user
      %v = hir.alias_select %a[%i] axis 0 : {F} -> !fusion.tensor<f32[64]>
      %w = fusion.neg %v into %v : !fusion.tensor<f32[64]> -> !fusion.tensor<f32[64]>
      hir.set_current_stream %user
      hir.synchronize %s
    }}
    hir.return %a : {F}"""


@pytest.mark.parametrize("number_of_streams", [1, 4])
def test_loop_rotates_over_streams_i_mod_n(number_of_streams):
    evaluator = Evaluator(parse_module(program(LOOP, f"%a: {F}", F)), number_of_streams=number_of_streams,
                          record_streams=True)
    (a,) = inputs((8, 64))
    expected = -a
    (out,) = evaluator.run([a])
    torch.testing.assert_close(out, expected)
    assert evaluator.streams.keys == list(range(number_of_streams))
    ids = [evaluator.streams.get(i % number_of_streams).id for i in range(8)]
    assert evaluator.stream_log == [("fusion.neg", s) for s in ids]


def test_compiled_once_run_many():
    evaluator = Evaluator(parse_module(program(LOOP, f"%a: {F}", F)))
    run = evaluator.compiled.run
    for seed in range(3):
        (a,) = inputs((8, 64), seed=seed)
        expected = -a
        (out,) = evaluator.run([a])
        torch.testing.assert_close(out, expected)
    assert evaluator.compiled.run is run


def test_fresh_buffers_per_run():
    m = parse_module(program(f"%o = hir.allocate : {F}\n %c = fusion.add %a, %a into %o : {F}, {F} -> {F}\n"
                             f" hir.return %c : {F}", f"%a: {F}", F))
    evaluator = Evaluator(m)
    a, b = inputs((8, 64), (8, 64))
    (first,) = evaluator.run([a])
    (second,) = evaluator.run([b])
    assert first.data_ptr() != second.data_ptr()
    torch.testing.assert_close(first, 2 * a)


# -- errors -------------------------------------------------------------------------

SHARDED = "!fusion.tensor<f32[2 didx, 64], mesh=[0, 1]>"


BAD_INPUTS = [
    ([torch.zeros(8, 64)], r"takes 2 inputs, got 1"),
    ([torch.zeros(8, 64), torch.zeros(8, 63)], r"argument 1 \(%o\): expected shape \[8, 64\] .* got \[8, 63\]"),
    ([torch.zeros(8, 64, dtype=torch.float64), torch.zeros(8, 64)], r"argument 0 \(%a\): expected dtype torch.float32, got torch.float64"),
    ([torch.zeros(8, 64, device="meta"), torch.zeros(8, 64)], r"argument 0 \(%a\): expected a tensor on cpu, got one on meta"),
    ([None, torch.zeros(8, 64)], r"argument 0 \(%a\): expected a tensor of shape \[8, 64\] .* got None"),
]


def _add_into_output_module():
    return parse_module(program(f"%c = fusion.add %a, %a into %o : {F}, {F} -> {F}\n hir.return %c : {F}",
                                f"%a: {F}, %o: {F}", F))


def _add_into_output() -> Evaluator:
    return Evaluator(_add_into_output_module())


@pytest.mark.parametrize("given, message", BAD_INPUTS)
def test_bad_inputs_are_refused_before_anything_runs(given, message):
    m = _add_into_output_module()
    before = [x.clone() if isinstance(x, torch.Tensor) and x.device.type == "cpu" else None for x in given]
    with pytest.raises(InputError, match=message):
        execute(m, given)
    for x, y in zip(given, before):
        if y is not None:
            assert torch.equal(x, y)


@pytest.mark.parametrize("given, message", BAD_INPUTS)
def test_bad_inputs_are_refused_after_good_ones(given, message):
    evaluator = _add_into_output()
    evaluator.run([torch.ones(8, 64), torch.zeros(8, 64)])
    with pytest.raises(InputError, match=message):
        evaluator.run(given)
    (c,) = evaluator.run([torch.ones(8, 64), torch.zeros(8, 64)])
    assert torch.equal(c, torch.full((8, 64), 2.0))


def test_inputs_of_the_signature_last_checked_are_not_checked_again(monkeypatch):
    evaluator = _add_into_output()
    checked = []
    monkeypatch.setattr(evaluator, "check_inputs",
                        lambda inputs: (checked.append(inputs), Evaluator.check_inputs(evaluator, inputs)))
    evaluator.run([torch.ones(8, 64), torch.zeros(8, 64)])
    evaluator.run([torch.ones(8, 64), torch.zeros(8, 64)])  # other tensors, the same signature
    assert len(checked) == 1
    with pytest.raises(InputError):
        evaluator.run([torch.ones(8, 64, dtype=torch.float64), torch.zeros(8, 64)])
    assert len(checked) == 2


def test_inputs_are_local_shards():
    m = parse_module(program(f"%c = fusion.neg %a : {SHARDED} -> {SHARDED}\n hir.return %c : {SHARDED}",
                             f"%a: {SHARDED}", SHARDED))
    with pytest.raises(InputError, match=r"expected shape \[1, 64\] \(local shard on rank 0 of"):
        execute(m, [torch.zeros(2, 64)])
    (c,) = execute(m, [torch.ones(1, 64)])
    assert torch.equal(c, -torch.ones(1, 64))


def test_ops_of_a_mesh_without_this_rank_are_skipped():
    T = "!fusion.tensor<f32[4], mesh=[0]>"
    m = parse_module(program(f"%o = hir.allocate : {T}\n %c = fusion.neg %a into %o : {T} -> {T}\n hir.return %c : {T}",
                             f"%a: {T}", T))
    assert execute(m, [None], rank=1, world_size=2) == [None]
    with pytest.raises(InputError, match=r"expected None \(rank 1 is not in mesh \[0\]\)"):
        execute(m, [torch.zeros(4)], rank=1, world_size=2)


@pytest.mark.parametrize("op, result", [
    (f"fusion.set %a : {SHARDED} -> !fusion.tensor<f32[2, 64], mesh=[0, 1]>", "!fusion.tensor<f32[2, 64], mesh=[0, 1]>"),
    (f"fusion.reduce sum %a dims [0] : {SHARDED} -> !fusion.tensor<f32[r2 didx, 64], mesh=[0, 1]>",
     "!fusion.tensor<f32[r2 didx, 64], mesh=[0, 1]>"),
])
def test_unlowered_communication_is_refused(op, result):
    m = parse_module(program(f"%c = {op}\n hir.return %c : {result}", f"%a: {SHARDED}", result), "prog.mlir")
    with pytest.raises(HostIRError, match=r"prog.mlir:2:\d+: error: '(fusion.set|fusion.reduce)' op needs a communication"):
        Evaluator(m)


def test_slicing_a_sharded_axis_is_refused():
    A = "!fusion.tensor<f32[4(2 didx, 2), 64], mesh=[0, 1]>"
    R = "!fusion.tensor<f32[2(2 didx, 1), 64], mesh=[0, 1]>"
    m = parse_module(program(f"%c = fusion.slice %a starts [0, 0] stops [2, 64] steps [1, 1] : {A} -> {R}\n"
                             f" hir.return %c : {R}", f"%a: {A}", R))
    # A slice of a sharded axis reshards (decompose-reshardings gathers its input first).
    with pytest.raises(HostIRError, match=r"'fusion.slice' op needs a communication .* but was not lowered to one"):
        Evaluator(m)


def test_a_collective_over_other_ranks_needs_torch_distributed():
    G = "!fusion.tensor<f32[2, 64], mesh=[0, 1]>"
    body = f"""
    %o = hir.allocate : {G}
    %w = hir.allgather %a -> %o team [0, 1] : {SHARDED} -> {G}
    hir.wait %w
    hir.return %o : {G}"""
    with pytest.raises(HostIRError, match=r"'hir.allgather' op team \[0, 1\] needs torch.distributed"):
        Evaluator(parse_module(program(body, f"%a: {SHARDED}", G)), world_size=2)


def test_a_team_of_one_is_a_local_copy():
    T = "!fusion.tensor<f32[8]>"
    body = f"""
    %o = hir.allocate : {T}
    %w = hir.allreduce %a -> %o team [0] op sum : {T} -> {T}
    hir.wait %w
    hir.return %o : {T}"""
    a = torch.arange(8.0)
    assert torch.equal(execute(parse_module(program(body, f"%a: {T}", T)), [a])[0], a)


# -- the reference semantics ------------------------------------------------------------


def test_run_fusion_covers_every_kind_of_op():
    text = ALL_OPS
    a, b, w, bias = inputs((8, 4), (4, 2), (3, 4), (3,))
    outs = run_fusion(parse_module(text), [a, b, w, bias])
    expected = [
        a @ b, torch.nn.functional.linear(a, w, bias), a.t(), a.reshape(32), a[::2, 1:], a[2],
        a.to(torch.bfloat16), torch.relu(a), a * 2, a < 2, a.unsqueeze(0), a.prod(1), a.amax(0), torch.exp(a),
    ]
    assert len(outs) == len(expected)
    for got, want in zip(outs, expected):
        torch.testing.assert_close(got, want)


ALL_OPS = """
!a = !fusion.tensor<f32[8, 4]>
fusion.func @g(%a: !a, %b: !fusion.tensor<f32[4, 2]>, %w: !fusion.tensor<f32[3, 4]>, %bias: !fusion.tensor<f32[3]>)
    -> (!fusion.tensor<f32[8, 2, r4]>, !fusion.tensor<f32[8, 3, r4]>, !fusion.tensor<f32[4, 8]>, !fusion.tensor<f32[32]>,
        !fusion.tensor<f32[4, 3]>, !fusion.tensor<f32[4]>, !fusion.tensor<bf16[8, 4]>, !a, !a, !fusion.tensor<i1[8, 4]>,
        !fusion.tensor<f32[b1, 8, 4]>, !fusion.tensor<f32[8, r4]>, !fusion.tensor<f32[r8, 4]>, !a) {
  %c = fusion.matmul %a, %b : !a, !fusion.tensor<f32[4, 2]> -> !fusion.tensor<f32[8, 2, r4]>
  %d = fusion.linear %a, %w bias %bias : !a, !fusion.tensor<f32[3, 4]>, !fusion.tensor<f32[3]> -> !fusion.tensor<f32[8, 3, r4]>
  %f = fusion.permute %a dims [1, 0] : !a -> !fusion.tensor<f32[4, 8]>
  %g = fusion.broadcast %a dims [0] : !a -> !fusion.tensor<f32[b1, 8, 4]>
  %h = fusion.squeeze %g dims [0] : !fusion.tensor<f32[b1, 8, 4]> -> !a
  %i = fusion.reshape %h : !a -> !fusion.tensor<f32[32]>
  %j = fusion.slice %a starts [0, 1] stops [8, 4] steps [2, 1] : !a -> !fusion.tensor<f32[4, 3]>
  %k = arith.constant 2 : index
  %l = fusion.select %a[%k] dim 0 : !a, index -> !fusion.tensor<f32[4]>
  %m = fusion.cast %a : !a -> !fusion.tensor<bf16[8, 4]>
  %n = fusion.relu %a : !a -> !a
  %s = arith.constant 2.0 : f32
  %o = fusion.mul %a, %s : !a, f32 -> !a
  %p = fusion.lt %a, %s : !a, f32 -> !fusion.tensor<i1[8, 4]>
  %q = fusion.reduce prod %a dims [1] : !a -> !fusion.tensor<f32[8, r4]>
  %r = fusion.reduce max %a dims [0] : !a -> !fusion.tensor<f32[r8, 4]>
  %e = fusion.exp %a : !a -> !a
  fusion.return %c, %d, %f, %i, %j, %l, %m, %n, %o, %p, %g, %q, %r, %e : !fusion.tensor<f32[8, 2, r4]>,
    !fusion.tensor<f32[8, 3, r4]>, !fusion.tensor<f32[4, 8]>, !fusion.tensor<f32[32]>, !fusion.tensor<f32[4, 3]>,
    !fusion.tensor<f32[4]>, !fusion.tensor<bf16[8, 4]>, !a, !a, !fusion.tensor<i1[8, 4]>,
    !fusion.tensor<f32[b1, 8, 4]>, !fusion.tensor<f32[8, r4]>, !fusion.tensor<f32[r8, 4]>, !a
}
"""


def test_reference_results_never_alias_inputs():
    A = "!fusion.tensor<f32[8, 4]>"
    text = f"""fusion.func @f(%a: {A}) -> ({A}, !fusion.tensor<f32[32]>) {{
      %s = fusion.set %a : {A} -> {A}
      %r = fusion.reshape %a : {A} -> !fusion.tensor<f32[32]>
      fusion.return %s, %r : {A}, !fusion.tensor<f32[32]>
    }}"""
    (a,) = inputs((8, 4))
    for out in run_fusion(parse_module(text), [a]):
        assert out.untyped_storage().data_ptr() != a.untyped_storage().data_ptr()


@pytest.mark.parametrize("op, arg_types, result, expected", [
    ("fusion.matmul %a, %b", "!fusion.tensor<f32[8, 4]>, !fusion.tensor<f32[4, 2]>", "f32[8, 2, r4]",
     lambda a, b, w: a @ b),
    ("fusion.matmul %a1, %b", "!fusion.tensor<f32[4]>, !fusion.tensor<f32[4, 2]>", "f32[2, r4]",
     lambda a, b, w: a[0] @ b),
    ("fusion.linear %a, %w", "!fusion.tensor<f32[8, 4]>, !fusion.tensor<f32[3, 4]>", "f32[8, 3, r4]",
     lambda a, b, w: a @ w.t()),
    ("fusion.linear %a, %w bias %bias", "!fusion.tensor<f32[8, 4]>, !fusion.tensor<f32[3, 4]>, !fusion.tensor<f32[3]>",
     "f32[8, 3, r4]", lambda a, b, w: a @ w.t() + w[:, 0]),
    ("fusion.permute %a dims [1, 0]", "!fusion.tensor<f32[8, 4]>", "f32[4, 8]", lambda a, b, w: a.t()),
    ("fusion.reshape %a", "!fusion.tensor<f32[8, 4]>", "f32[2, 16]", lambda a, b, w: a.reshape(2, 16)),
    ("fusion.cast %a", "!fusion.tensor<f32[8, 4]>", "f64[8, 4]", lambda a, b, w: a.double()),
])
@pytest.mark.parametrize("preallocated", [False, True])
def test_standalone_ops_with_and_without_destination(op, arg_types, result, expected, preallocated):
    R = f"!fusion.tensor<{result}>"
    body = f"""
    %c0 = arith.constant 0 : index
    %a1 = hir.alias_select %a[%c0] axis 0 : !fusion.tensor<f32[8, 4]> -> !fusion.tensor<f32[4]>
    %bias = hir.alias_select %w[%c0] axis 1 : !fusion.tensor<f32[3, 4]> -> !fusion.tensor<f32[3]>
    %o = hir.allocate : {R}
    %c = {op}{" into %o" if preallocated else ""} : {arg_types} -> {R}
    hir.return %c : {R}"""
    args = "%a: !fusion.tensor<f32[8, 4]>, %b: !fusion.tensor<f32[4, 2]>, %w: !fusion.tensor<f32[3, 4]>"
    a, b, w = inputs((8, 4), (4, 2), (3, 4))
    (c,) = execute(parse_module(program(body, args, R)), [a, b, w])
    torch.testing.assert_close(c, expected(a, b, w))


# -- every buffer has the layout its type declares -----------------------------------


def test_a_fresh_result_of_a_permuted_input_is_laid_out_as_its_type_says():
    # Regression (issue 12, defect 10): torch keeps the input's column-major strides.
    A, R = "!fusion.tensor<f32[4, 6], alloc=[1, 0]>", "!fusion.tensor<f32[4, 6]>"
    m = parse_module(program(f"%c = fusion.add %a, %a : {A}, {A} -> {R}\n hir.return %c : {R}", f"%a: {A}", R))
    a = torch.randn(6, 4).t()
    (c,) = execute(m, [a])
    assert c.is_contiguous()
    torch.testing.assert_close(c, 2 * a)


def test_a_fresh_result_with_an_allocation_order_and_a_dynamic_extent():
    # Regression (issue 12, defect 9): the result was allocated from the static type, [4, -1].
    A, R = "!fusion.tensor<f32[?, 4]>", "!fusion.tensor<f32[?, 4], alloc=[1, 0]>"
    text = f"fusion.func @f(%a: {A}) -> {R} {{\n %b = fusion.neg %a : {A} -> {R}\n fusion.return %b : {R}\n}}"
    a = torch.randn(2, 4)
    (b,) = run_fusion(parse_module(text), [a])
    assert b.stride() == (1, 2)
    torch.testing.assert_close(b, -a)


def test_a_dynamic_buffer_takes_its_extents_from_the_program():
    A, B = "!fusion.tensor<f32[?, 4]>", "!fusion.tensor<f32[?, 4], alloc=[1, 0]>"
    body = f"""
    %n = hir.extent %a axis 0 : {A}
    %b = hir.allocate(%n) : {B}
    %r = fusion.neg %a into %b : {A} -> {B}
    hir.return %r : {B}"""
    (a,) = inputs((3, 4))
    (b,) = execute(parse_module(program(body, f"%a: {A}", B)), [a])
    assert b.shape == (3, 4) and b.stride() == (1, 3)
    torch.testing.assert_close(b, -a)


def test_a_destination_of_another_dynamic_shape_is_refused_and_left_as_it_was():
    # torch's out= resized the caller's [6] buffer to [4], with only a warning.
    D = "!fusion.tensor<f32[?]>"
    body = f"""
    %r = fusion.neg %a into %o : {D} -> {D}
    hir.return %r : {D}"""
    evaluator = Evaluator(parse_module(program(body, f"%a: {D}, %o: {D}", D)))
    o = torch.zeros(6)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with pytest.raises(ExecutionError, match=r"'fusion.neg' op failed: destination has shape \[6\] but the value "
                                                 r"has shape \[4\]"):
            evaluator.run([torch.ones(4), o])
    assert o.shape == (6,) and not o.any()
    (same,) = evaluator.run([torch.ones(6), o])
    assert same is o and o.tolist() == [-1.0] * 6


def test_a_dynamic_buffer_without_its_extents_is_refused_by_every_rank():
    A = "!fusion.tensor<f32[?, 4], mesh=[0]>"
    m = parse_module(program(f"%b = hir.allocate : {A}\n hir.return %b : {A}", "", A), "prog.mlir")
    for rank in (0, 1):
        with pytest.raises(HostIRError, match=r"prog.mlir:2:1: error: 'hir.allocate' op cannot allocate .*: its local "
                                              r"shape \['\?', 4\] is dynamic and no input provides its extent"):
            Evaluator(m, rank=rank, world_size=2)


def test_a_buffer_sized_by_a_tensor_this_rank_does_not_hold_is_refused_where_it_is_allocated():
    # Found by a long differential profile with verify-collective-order disabled (which
    # refuses the loop such a program builds): rank 1 allocated with no extent, a TypeError.
    A, X = "!fusion.tensor<f32[?, 4], mesh=[0, 1]>", "!fusion.tensor<f32[?, 4], mesh=[0]>"
    body = f"%n = hir.extent %x axis 0 : {X}\n %b = hir.allocate(%n) : {A}\n hir.return %b : {A}"
    m = parse_module(program(body, f"%x: {X}", A), "prog.mlir")
    Evaluator(m, rank=0, world_size=2)
    with pytest.raises(HostIRError, match=r"prog.mlir:3:2: error: 'hir.allocate' op cannot allocate .* on rank 1: its "
                                          r"extent is read from %x, which this rank does not hold"):
        Evaluator(m, rank=1, world_size=2)


def test_a_loop_counted_by_a_tensor_this_rank_does_not_hold_runs_nowhere_else_or_is_refused():
    # The trip count is %x's length, held by rank 0 only. A body working on %y alone
    # (rank 0's too) runs no iteration on rank 1; one reading %z, which rank 1 holds,
    # is refused there (a long differential profile crashed on such a loop: range(None)).
    X, Y, Z = (f"!fusion.tensor<f32[?, 4], mesh=[{m}]>" for m in ("0", "0", "0, 1"))
    R = {m: f"!fusion.tensor<f32[4], mesh=[{m}]>" for m in ("0", "0, 1")}

    def looping(over: str, t: str, row: str):
        body = (f"%n = hir.extent %x axis 0 : {X}\n %c0 = arith.constant 0 : index\n %c1 = arith.constant 1 : index\n"
                f" scf.for %i = %c0 to %n step %c1 {{\n %r = hir.alias_select {over}[%i] axis 0 : {t} -> {row}\n }}\n"
                f" hir.return")
        return parse_module(program(body, f"%x: {X}, %y: {Y}, %z: {Z}", ""), "prog.mlir")

    assert Evaluator(looping("%y", Y, R["0"]), rank=1, world_size=2).run([None, None, torch.zeros(3, 4)]) == []
    with pytest.raises(HostIRError, match=r"prog.mlir:5:2: error: 'scf.for' op runs as many times as %x is long, which "
                                          r"rank 1 does not hold, but its 'hir.alias_select' works on rank 1"):
        Evaluator(looping("%z", Z, R["0, 1"]), rank=1, world_size=2)


def test_an_input_is_laid_out_as_its_type_says_before_the_program_reads_it():
    T = "!fusion.tensor<f32[4, 6]>"
    a = torch.randn(6, 4).t()
    (b,) = execute(parse_module(program(f"hir.return %a : {T}", f"%a: {T}", T)), [a])
    assert b.is_contiguous() and torch.equal(b, a)


def test_a_collective_of_a_strided_chunk_is_refused_by_every_rank():
    # Regression (issue 12, defect 10): the refusal came when posting, on the ranks of
    # the team only, while the other ranks waited for them.
    T, C = "!fusion.tensor<f32[4, 6]>", "!fusion.tensor<f32[4]>"
    body = f"""
    %o = hir.allocate : {C}
    %i = arith.constant 1 : index
    %v = hir.alias_select %a[%i] axis 1 : {T} -> {C}
    %w = hir.allreduce %v -> %o team [0] op sum : {C} -> {C}
    hir.wait %w
    hir.return %o : {C}"""
    m = parse_module(program(body, f"%a: {T}", C), "prog.mlir")
    for rank in (0, 1):
        with pytest.raises(HostIRError, match=r"prog.mlir:6:5: error: 'hir.allreduce' op its input %v is a strided view"):
            Evaluator(m, rank=rank, world_size=2)


def test_a_collective_of_the_outermost_chunk_runs():
    T, C = "!fusion.tensor<f32[4, 6]>", "!fusion.tensor<f32[6]>"
    body = f"""
    %o = hir.allocate : {C}
    %i = arith.constant 1 : index
    %v = hir.alias_select %a[%i] axis 0 : {T} -> {C}
    %w = hir.allreduce %v -> %o team [0] op sum : {C} -> {C}
    hir.wait %w
    hir.return %o : {C}"""
    (a,) = inputs((4, 6))
    assert torch.equal(execute(parse_module(program(body, f"%a: {T}", C)), [a])[0], a[1])


# -- refusals every rank reaches ---------------------------------------------------------


def test_a_fusion_is_not_run_as_a_rank():
    # Regression (issue 12, defect 11): with lower-to-host and convert-op-to-communication
    # disabled, each rank ran the fusion on its shards and returned whole-size outputs.
    T, R = "!fusion.tensor<f32[4, 8], mesh=[0, 1]>", "!fusion.tensor<f32[4(2 didx, 2), 8], mesh=[0, 1]>"
    text = f"fusion.func @f(%a: {T}) -> {R} {{\n %b = fusion.neg %a : {T} -> {R}\n fusion.return %b : {R}\n}}"
    with pytest.raises(HostIRError, match=r"'fusion.func' op is a fusion, not a host program"):
        Evaluator(parse_module(text), rank=0, world_size=2)


def test_an_unlowered_communication_is_refused_by_a_rank_outside_its_input_mesh():
    # Regression (TRIAGE C8): rank 0 skipped the set from mesh [1] and crashed on its None result.
    A, B = "!fusion.tensor<f32[4], mesh=[1]>", "!fusion.tensor<f32[4], mesh=[0]>"
    m = parse_module(program(f"%b = fusion.set %a : {A} -> {B}\n %c = fusion.neg %b : {B} -> {B}\n hir.return %c : {B}",
                             f"%a: {A}", B))
    for rank in (0, 1):
        with pytest.raises(HostIRError, match=r"'fusion.set' op needs a communication"):
            Evaluator(m, rank=rank, world_size=2)


def test_tensors_with_and_without_a_mesh_are_refused_by_every_rank():
    # Regression (TRIAGE W3): rank 1 skipped abs(w) and returned None for an output every
    # rank holds.
    A, R = "!fusion.tensor<f32[4], mesh=[0]>", "!fusion.tensor<f32[4]>"
    m = parse_module(program(f"%b = fusion.abs %a : {A} -> {R}\n hir.return %b : {R}", f"%a: {A}", R))
    for rank in (0, 1):
        with pytest.raises(HostIRError, match=r"'fusion.abs' op mixes tensors with and without a device mesh"):
            Evaluator(m, rank=rank, world_size=2)


@pytest.mark.parametrize("body", [
    "%o = hir.allocate : {S}\n %c = fusion.neg %a into %o : {T}, {S} -> {S}",
    "%c = fusion.neg %a : {T} -> {S}",
])
def test_a_stream_chunk_buffer_outside_a_stream_loop_is_refused(body):
    # Regression (issue 12, defect 8): outside any stream loop the buffer held one chunk.
    T, S = "!fusion.tensor<f32[4, 6]>", "!fusion.tensor<f32[4 stream, 6], alloc=[0 stream, 1]>"
    body = body.replace("{T}, {S} -> {S}", "{T} -> {S}").format(T=T, S=S)
    m = parse_module(program(f"{body}\n hir.return %c : {S}", f"%a: {T}", S))
    with pytest.raises(HostIRError, match=r"is allocated one stream chunk at a time, which only a stream loop"):
        Evaluator(m)


def test_a_whole_device_axis_of_another_extent_at_run_time_is_refused_at_the_op():
    """`? didx` promises one element per device; only the run's extents can break it."""
    t = "f32[?(1 didx, ?), 3], mesh=[0]"
    u = "f32[? didx, 3], mesh=[0]"
    program = parse_module(f"""hir.program @p(%x: !fusion.tensor<{t}>) -> !fusion.tensor<{u}> {{
  %y = fusion.neg %x : !fusion.tensor<{t}> -> !fusion.tensor<{u}>
  hir.return %y : !fusion.tensor<{u}>
}}""")
    (y,) = execute(program, [torch.ones(1, 3)], rank=0, world_size=1)
    assert torch.equal(y, -torch.ones(1, 3))
    with pytest.raises(ExecutionError, match=r"'fusion.neg' op failed: value axis 0 of its result has 2 elements at run "
                                             r"time, but it is parallelized whole over 1 devices"):
        execute(program, [torch.ones(2, 3)], rank=0, world_size=1)
