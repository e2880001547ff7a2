"""The stream hazard check (runtime/hazards.py): work of different streams that touches the
same memory must be ordered by the program, whatever order CPU ranks happen to run it in."""

from __future__ import annotations

import pytest
import torch

from hostir.runtime import Evaluator, ExecutionError, SpmdError, run_spmd
from hostir.runtime.hazards import Hazards, StreamHazard
from hostir_dialect.context import parse_module

A, B = 1, 2  # two streams of the pool, by id


def test_a_write_and_a_read_on_two_unordered_streams_conflict():
    hazards, buffer = Hazards(), torch.zeros(8)
    hazards.access(A, None, writes=[buffer])
    with pytest.raises(StreamHazard, match="stream hazard: .* reads memory on stream 2 that .* writes on stream 1"):
        hazards.access(B, None, reads=[buffer])


def test_waiting_for_the_writer_orders_the_reader():
    hazards, buffer = Hazards(), torch.zeros(8)
    hazards.access(A, None, writes=[buffer])
    hazards.join(B, hazards.mark(A))
    hazards.access(B, None, reads=[buffer])
    hazards.access(A, None, reads=[buffer])  # two reads never conflict
    with pytest.raises(StreamHazard):  # but A has not waited for B's read
        hazards.access(A, None, writes=[buffer])


def test_a_mark_is_the_point_reached_when_it_was_taken():
    hazards, buffer = Hazards(), torch.zeros(8)
    mark = hazards.mark(A)
    hazards.access(A, None, writes=[buffer])
    hazards.join(B, mark)
    with pytest.raises(StreamHazard):
        hazards.access(B, None, reads=[buffer])


def test_chunks_that_interleave_in_memory_do_not_conflict_unless_they_share_elements():
    hazards, buffer = Hazards(), torch.zeros(4, 3, 5)
    hazards.access(A, None, writes=[buffer.select(1, 0)])  # strided: elements 0-4, 15-19, ...
    hazards.access(B, None, writes=[buffer.select(1, 1)])
    hazards.access(B, None, writes=[buffer[:, 2, 1:3]])
    with pytest.raises(StreamHazard):
        hazards.access(B, None, reads=[buffer[3, 0, 4:]])  # one element of A's chunk


def test_freeing_needs_every_access_ordered_before_and_forgets_them():
    hazards, buffer = Hazards(), torch.zeros(8)
    hazards.access(A, None, reads=[buffer])
    with pytest.raises(StreamHazard, match="frees a buffer on stream 2 while .* may still read it on stream 1"):
        hazards.free(B, None, buffer)
    hazards.join(B, hazards.mark(A))
    hazards.free(B, None, buffer)
    hazards.access(A, None, writes=[buffer])  # the memory's next life: nothing recorded


def test_a_peer_writes_a_symmetric_instance_after_this_rank_released_it():
    hazards, instance = Hazards(), torch.zeros(2, 4)
    hazards.access(A, None, reads=[instance[1]])
    hazards.release(A, None, instance)  # A read slot 1 before releasing: fine
    hazards.acquire(A, instance)
    hazards.remote_write(B, None, instance[1], peer=1)  # the peer's push, waited for on B
    hazards.access(B, None, reads=[instance[1]])
    hazards.access(A, None, reads=[instance[0]])  # another slot
    with pytest.raises(StreamHazard, match="the push of the member at position 1"):
        hazards.access(A, None, reads=[instance[1]])  # A never waited for the push


def test_pushes_into_the_peers_instances_come_after_this_rank_acquired_the_buffer():
    hazards, instance = Hazards(), torch.zeros(4)
    with pytest.raises(StreamHazard, match="without acquiring it in this run"):
        hazards.push(B, None, instance)
    hazards.acquire(A, instance)
    with pytest.raises(StreamHazard, match="before its acquisition on"):
        hazards.push(B, None, instance)  # B never waited for A
    hazards.join(B, hazards.mark(A))
    hazards.push(B, None, instance)


def test_a_read_after_the_release_races_with_the_peers_push():
    hazards, instance = Hazards(), torch.zeros(4)
    hazards.release(A, None, instance)
    hazards.acquire(A, instance)
    hazards.access(A, None, reads=[instance])  # too late: the peer may be writing
    with pytest.raises(StreamHazard):
        hazards.remote_write(B, None, instance, peer=1)


# Two worker streams write the same buffer, neither waiting for the other: right in CPU
# program order, a race on a GPU.
RACE = """
!t = !fusion.tensor<f32[4]>
hir.program @race(%x: !t) -> !t {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %out = hir.allocate : !t
  %user = hir.get_current_stream
  %s0 = hir.stream %c0
  %s1 = hir.stream %c1
  hir.set_current_stream %s0
  hir.synchronize %user
  %a = fusion.neg %x into %out : !t -> !t
  hir.set_current_stream %s1
  hir.synchronize %user
  %b = fusion.abs %x into %out : !t -> !t
  hir.set_current_stream %user
  hir.synchronize %s0
  hir.synchronize %s1
  hir.return %out : !t
}
"""


def test_a_program_whose_streams_race_fails_at_the_op_that_races():
    module = parse_module(RACE, "race.mlir")
    with pytest.raises(ExecutionError, match=r"race.mlir:15:3: error: 'fusion.abs' op failed: stream hazard: "
                                             r"'fusion.abs' at race.mlir:15:3 writes memory on stream 2 that "
                                             r"'fusion.neg' at race.mlir:12:3 writes on stream 1"):
        Evaluator(module, rank=0, world_size=1, check_hazards=True).run([torch.ones(4)])
    ordered = RACE.replace("  %b = fusion.abs", "  hir.synchronize %s0\n  %b = fusion.abs")
    result = Evaluator(parse_module(ordered), rank=0, world_size=1, check_hazards=True).run([-torch.ones(4)])
    torch.testing.assert_close(result[0], torch.ones(4))


def test_the_check_is_off_unless_asked_for(monkeypatch):
    monkeypatch.delenv("HOSTIR_CHECK_HAZARDS", raising=False)
    (result,) = Evaluator(parse_module(RACE), rank=0, world_size=1).run([-torch.ones(4)])
    torch.testing.assert_close(result, torch.ones(4))


# A collective's output read on a stream that never waited for it: the wait is on the
# worker stream, the read on the user stream, which did not synchronize with the worker.
UNWAITED = """
!a = !fusion.tensor<f32[2 didx, 4], mesh=[0, 1]>
!g = !fusion.tensor<f32[2, 4], mesh=[0, 1]>
hir.program @unwaited(%a: !a) -> !g {
  %c0 = arith.constant 0 : index
  %g = hir.allocate : !g
  %out = hir.allocate : !g
  %user = hir.get_current_stream
  %s0 = hir.stream %c0
  hir.set_current_stream %s0
  hir.synchronize %user
  %w = hir.allgather %a -> %g team [0, 1] : !a -> !g
  hir.wait %w
  hir.set_current_stream %user
  %r = fusion.neg %g into %out : !g -> !g
  hir.synchronize %s0
  hir.return %out : !g
}
"""


def test_reading_a_collective_output_on_a_stream_that_did_not_wait_for_it_fails_on_every_rank():
    per_rank = [[torch.full((1, 4), float(r))] for r in range(2)]
    with pytest.raises(SpmdError, match=r"unwaited.mlir:15:3: error: 'fusion.neg' op failed: stream hazard: "
                                        r"'fusion.neg' at unwaited.mlir:15:3 reads memory on stream 0 that the "
                                        r"transfer of 'hir.allgather' at unwaited.mlir:12:3 writes on the stream of 'hir.allgather' at unwaited.mlir:12:3, and nothing orders"):
        run_spmd(parse_module(UNWAITED, "unwaited.mlir"), per_rank, world_size=2, backend="gloo")
