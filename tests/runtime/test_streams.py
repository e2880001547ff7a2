"""The stream pool's logic on the CPU bookkeeping pool (the CUDA pool differs only in its
four primitives): marks are recorded only when a stream may have new work, streams become
torch's current stream only when work is enqueued, and a capture forks and joins every
stream the program uses. On a GPU, hostir's streams are drawn distinct from torch's pool."""

from __future__ import annotations

import itertools

import torch

from hostir.runtime import Evaluator, streams
from hostir.runtime.streams import CpuStreams
from hostir_dialect.context import parse_module

F = "!fusion.tensor<f32[4, 8]>"
ROW = "!fusion.tensor<f32[8]>"


def pipeline(chunks: int) -> str:
    """The sync loop and main loop stream-parallel-type emits, negating row i on stream i."""
    return f"""hir.program @main(%a: {F}) -> {F} {{
  %out = hir.allocate : {F}
  %user = hir.get_current_stream
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %n = arith.constant {chunks} : index
  scf.for %i = %c0 to %n step %c1 {{
    %w = hir.stream %i
    hir.set_current_stream %w
    hir.synchronize %user
  }}
  scf.for %i = %c0 to %n step %c1 {{
    %w = hir.stream %i
    hir.set_current_stream %w
    %ai = hir.alias_select %a[%i] axis 0 : {F} -> {ROW}
    %oi = hir.alias_select %out[%i] axis 0 : {F} -> {ROW}
    %r = fusion.neg %ai into %oi : {ROW} -> {ROW}
    hir.set_current_stream %user
    hir.synchronize %w
  }}
  hir.return %out : {F}
}}"""


def test_the_user_stream_is_marked_once_for_all_workers_and_each_worker_once():
    evaluator = Evaluator(parse_module(pipeline(4)), record_streams=True)
    x = torch.randn(4, 8)
    for run in range(2):
        streams = evaluator.streams
        streams.records.clear()
        (out,) = evaluator.run([x])
        torch.testing.assert_close(out, -x)
        workers = [streams.get(k).id for k in range(4)]
        assert streams.records == [streams.default.id, *workers], f"run {run}"
        assert all(streams.get(k).waited_for[-1] == streams.default.id for k in range(4))
        assert streams.default.waited_for[-4:] == workers


def test_work_runs_on_the_current_stream_which_becomes_active_only_for_work():
    evaluator = Evaluator(parse_module(pipeline(4)), record_streams=True)
    evaluator.run([torch.randn(4, 8)])
    streams = evaluator.streams
    negs = [stream for name, stream in evaluator.stream_log if name == "fusion.neg"]
    assert negs == [streams.get(k).id for k in range(4)]
    assert evaluator.stream_log[0] == ("hir.allocate", streams.default.id)
    assert streams.active is streams.default and streams.current() is streams.default


def test_a_stream_is_marked_again_after_it_was_current():
    streams = CpuStreams()
    streams.begin_run()
    user, first, second = streams.current(), streams.get(0), streams.get(1)
    streams.set_current(first)
    streams.synchronize(user)
    streams.set_current(user)  # the user stream may receive work again
    streams.set_current(second)
    streams.synchronize(user)
    streams.synchronize(first)
    streams.synchronize(first)
    assert streams.records == [user.id, user.id, first.id]
    assert second.waited_for == [user.id, first.id, first.id]


def test_a_stream_never_waits_for_itself_and_marks_do_not_outlive_a_run():
    streams = CpuStreams()
    streams.begin_run()
    worker = streams.get(0)
    streams.set_current(worker)
    streams.synchronize(worker)
    streams.synchronize(streams.default)
    streams.end_run()
    streams.begin_run()
    streams.set_current(worker)
    streams.synchronize(streams.default)
    # The bookkeeping holds one run: the second run recorded a fresh mark on the default
    # stream (the first run's mark did not outlive it) and waited for it.
    assert worker.waited_for == [0] and streams.records == [0]


def test_a_capture_forks_every_stream_from_its_stream_and_joins_them():
    streams = CpuStreams()
    streams.begin_run()
    with streams.capturing():
        first, second = streams.get(0), streams.get(1)
        streams.set_current(first)
        streams.set_current(second)
        streams.set_current(first)
        streams.set_current(streams.default)
    assert first.waited_for == [0] and second.waited_for == [0]
    assert streams.default.waited_for == [first.id, second.id]
    streams.set_current(first)  # no capture any more: no fork
    assert first.waited_for == [0]


def round_robin_pool(size: int):
    """torch's stream pool as its callers see it: the next of `size` streams, in turn."""
    turn = itertools.count()
    return lambda: next(turn) % size


def test_a_draw_skips_the_pool_streams_already_taken_even_after_the_pool_came_round():
    draw = round_robin_pool(streams.POOL_SIZE)
    taken = {draw()}  # a worker's stream
    for _ in range(streams.POOL_SIZE - 1):
        draw()  # other callers of the pool in between: the next draw is the worker's again
    side = streams.distinct_draw(draw, taken.__contains__)
    assert side not in taken


def test_when_every_pool_stream_is_taken_a_draw_shares_one():
    draw = round_robin_pool(streams.POOL_SIZE)
    everything = set(range(streams.POOL_SIZE))
    assert streams.distinct_draw(draw, everything.__contains__) in everything
