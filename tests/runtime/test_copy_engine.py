"""The copy-engine algorithms on CPU ranks (shared-memory symmetric buffers): each
collective gives what its NCCL counterpart gives, run after run."""

from __future__ import annotations

import re
from types import SimpleNamespace

import pytest
import torch
import torch.distributed as dist

from hostir.passes import lower
from hostir.runtime import Evaluator, shard_tensor
from hostir.runtime.compile.context import ExecutionError
from hostir.runtime.copy_engine import (
    LAST_POST_PIECES,
    CopyEngineAllgather,
    CopyEngineAllreduce,
    CopyEngineCollective,
    CopyEngineReduceScatter,
    Ordering,
)
from hostir.runtime.hazards import Hazards, StreamHazard
from hostir.runtime.launcher import launch
from hostir.runtime.symmetric_memory import Flags, SymmetricHeap, SymmetricTensor
from hostir_dialect import hir
from hostir_dialect.context import parse_module
from hostir_dialect.diagnostics import located_text
from hostir_dialect.fusion import ReduceKind

RUNS = 3  # the same slots, buffers and flags serve every run


def inputs(rank: int, run: int, numel: int) -> torch.Tensor:
    generator = torch.Generator().manual_seed(100 * run + rank)
    return torch.randn(numel, generator=generator)


def _collectives(rank: int, world_size: int) -> dict[str, list]:
    team = tuple(range(world_size))
    heap = SymmetricHeap(rank, torch.device("cpu"), lambda t: dist.group.WORLD, timeout=30)
    flags = Flags(heap, team, slots=8)
    ordering = Ordering(torch.device("cpu"))
    n = 4 * world_size
    gathered = heap.allocate(team, (world_size * n,), torch.float32)
    via_rs = heap.allocate(team, (n,), torch.float32)
    via_ar = heap.allocate(team, (2 * n,), torch.float32)
    allgather = CopyEngineAllgather(flags, 0, 2, ordering, gathered)
    reduce_scatter = CopyEngineReduceScatter(flags, 2, 2, ordering, via_rs, ReduceKind.SUM)
    allreduce = CopyEngineAllreduce(flags, 4, 2, ordering, via_ar, ReduceKind.MAX)  # 2 phases: slots 4-7
    results: dict[str, list] = {"allgather": [], "reduce_scatter": [], "allreduce": []}
    for run in range(RUNS):
        for collective in (allgather, reduce_scatter, allreduce):
            collective.begin_run()
        x = inputs(rank, run, n)
        for half in range(2):  # two posts per run, as two loop iterations would
            chunk = x[half * n // 2:(half + 1) * n // 2]
            part = gathered.local[half * world_size * n // 2:(half + 1) * world_size * n // 2]
            allgather.post(chunk, part).wait()
        results["allgather"].append(gathered.local.clone())
        out = torch.empty(n // world_size)
        reduce_scatter.post(x, out, via_rs.local).wait()
        results["reduce_scatter"].append(out)
        out = torch.empty(n)
        allreduce.post(x, out, via_ar.local).wait()
        results["allreduce"].append(out)
        dist.barrier()  # the next run's pushes must not overtake a peer still reading
    return results


@pytest.mark.parametrize("world_size", [2, 3, 4])
def test_copy_engine_collectives_match_their_definitions(world_size):
    per_rank = launch(_collectives, world_size, backend="gloo", timeout=120)
    n = 4 * world_size
    for run in range(RUNS):
        xs = [inputs(r, run, n) for r in range(world_size)]
        halves = [torch.cat([x[h * n // 2:(h + 1) * n // 2] for x in xs]) for h in range(2)]
        total = torch.stack(xs).sum(0)
        for rank, result in enumerate(per_rank):
            torch.testing.assert_close(result["allgather"][run], torch.cat(halves))
            torch.testing.assert_close(result["reduce_scatter"][run], total.view(world_size, -1)[rank])
            torch.testing.assert_close(result["allreduce"][run], torch.stack(xs).amax(0))


@pytest.mark.parametrize("world_size", [2, 3, 4, 8])
def test_pushes_go_in_ring_order_one_into_each_gpu_at_a_time_and_arrive_in_the_consumers_order(world_size):
    def collective(position: int) -> CopyEngineCollective:
        flags = SimpleNamespace(memory=SimpleNamespace(position=position), size=world_size)
        return CopyEngineCollective(flags, 0, 1, Ordering(torch.device("cpu")))  # type: ignore[arg-type]

    members = [collective(p) for p in range(world_size)]
    for step in range(world_size - 1):
        targets = [member.peers[step] for member in members]
        assert sorted(targets) == list(range(world_size)), f"step {step}: two pushes land on one GPU: {targets}"
        for sender, target in enumerate(targets):
            # What `split-by-member`'s loops wait for at this step (member me + s) arrives now.
            assert members[target].sources[step] == sender
    assert members[0].peers == tuple((-s) % world_size for s in range(1, world_size))


def _own_slot_after_peers_only_posts(rank: int, world_size: int) -> tuple[torch.Tensor, str]:
    team = tuple(range(world_size))
    heap = SymmetricHeap(rank, torch.device("cpu"), lambda t: dist.group.WORLD, timeout=30)
    flags = Flags(heap, team, slots=1)
    gathered = heap.allocate(team, (world_size * 4,), torch.float32)
    gathered.local.fill_(-1.0)
    dist.barrier()  # before any peer pushes into it
    allgather = CopyEngineAllgather(flags, 0, 1, Ordering(torch.device("cpu")), gathered, fills_own_slot=False)
    work = allgather.post(torch.full((4,), float(rank)), gathered.local)
    with pytest.raises(RuntimeError) as own:
        work.wait(rank)
    work.wait()
    dist.barrier()
    return gathered.local.clone(), str(own.value)


def test_a_peers_only_all_gather_fills_the_other_members_slots_and_leaves_its_own():
    for rank, (gathered, own) in enumerate(launch(_own_slot_after_peers_only_posts, 2, backend="gloo", timeout=60)):
        expected = torch.tensor([0.0] * 4 + [1.0] * 4)
        expected[4 * rank:4 * rank + 4] = -1.0  # as it was
        torch.testing.assert_close(gathered, expected)
        assert own == "waits for this rank's own slot, which a `peers_only` all-gather does not fill"


# matmul+AR with each chunk's rows as 2 blocks, one reduced by each member: split-by-member
# computes the peer's block, posts, computes the own block, then waits.
MATMUL_AR = """
!a = !fusion.tensor<f32[2, 2 didx, 2, 2, 4], mesh=[0, 1]>
!b = !fusion.tensor<f32[2 didx, 4, 3], mesh=[0, 1]>
!bb = !fusion.tensor<f32[b1, 2 didx, b1, 4, 3], mesh=[0, 1]>
!u = !fusion.tensor<f32[2 stream, 2 didx, 2, 2, 3, r4], mesh=[0, 1]>
!c = !fusion.tensor<f32[2 stream, r2, 2, 2, 3], mesh=[0, 1]>
fusion.func @matmul_ar(%a: !a, %b: !b) -> !c {
  %bb = fusion.broadcast %b dims [0, 2] : !b -> !bb
  %u = fusion.matmul %a, %bb : !a, !bb -> !u
  %c = fusion.reduce sum %u dims [1] : !u -> !c
  fusion.return %c : !c
}
"""


def _lowered_matmul_ar(options: str = "") -> tuple[str, list]:
    """MATMUL_AR lowered onto the copy engines (located text), and its inputs per rank."""
    module = parse_module(MATMUL_AR, "matmul_ar.mlir")
    lower(module, pipeline=f"hostir-lower{{transport=copy-engine{options}}}")
    (function,) = [op for op in module.ops if isinstance(op, hir.ProgramOp)]
    whole = [torch.randn(2, 2, 2, 2, 4), torch.randn(2, 4, 3)]
    return located_text(module), [[shard_tensor(x, arg.type, r) for r in range(2)] for x, arg in zip(whole, function.args)]


def _phase_two_not_after_the_own_block(rank: int, world_size: int, program: str, inputs: list) -> str:
    """The all-reduce with its second phase on a stream that never waited for the waiting
    stream's work: it reads the own block while the matmul may still write it."""
    original = CopyEngineCollective.push_and_signal

    def unordered(self, into, pushes, slot, phase=1, before=None):
        if phase == 1:
            return original(self, into, pushes, slot, phase, before)
        hazards = self.ordering.hazards
        self.ordering.fork = lambda phase, lane: hazards.new_stream("a stream that never waited for the own block")
        try:
            return original(self, into, pushes, slot, phase, before)
        finally:
            del self.ordering.fork

    CopyEngineCollective.push_and_signal = unordered
    evaluator = Evaluator(parse_module(program), rank=rank, world_size=world_size,
                          check_hazards=True)
    with pytest.raises(ExecutionError) as error:
        evaluator.run([x[rank] for x in inputs])
    return str(error.value)


def test_the_hazard_check_catches_an_all_reduce_second_phase_not_ordered_after_the_own_block():
    """The own block computed by the producer's matmul (by default the all-reduce computes
    it itself, on a stream that waited for the pushed blocks)."""
    program, inputs = _lowered_matmul_ar(" reduce-in-producer=false")
    for message in launch(_phase_two_not_after_the_own_block, 2, (program, inputs), backend="gloo", timeout=60):
        assert re.search(r"error: 'hir.wait' op failed: stream hazard: 'hir.allreduce' at matmul_ar.mlir:\d+:\d+ reads "
                         r"memory on a stream that never waited for the own block that 'fusion.matmul' at "
                         r"matmul_ar.mlir:\d+:\d+ writes on stream \d, and nothing orders the two", message), message


def _own_products(rank: int, world_size: int, program: str, inputs: list) -> tuple[list[int], torch.Tensor]:
    """The rows of each own product one run's all-reduces compute, and the run's result."""
    rows = []
    original = CopyEngineReduceScatter.reduce_onto_product

    def counted(self, out, received, own, stream=None):
        rows.append(own[0].reshape(-1, own[1].shape[-2]).shape[0])
        return original(self, out, received, own, stream)

    CopyEngineReduceScatter.reduce_onto_product = counted  # type: ignore[method-assign]  # this spawned rank only
    evaluator = Evaluator(parse_module(program), rank=rank, world_size=world_size, check_hazards=True)
    (result,) = evaluator.run([x[rank] for x in inputs])
    return rows, result


def test_the_last_post_of_a_run_computes_and_pushes_its_own_product_in_pieces():
    """The last chunk's exchange is what nothing is computed beside: its own product is
    computed in LAST_POST_PIECES blocks of rows, each pushed while the next is computed
    (the hazard check follows every piece); the other posts' in one."""
    program, inputs = _lowered_matmul_ar(" symmetric-allreduce-output=true")
    a, b = (torch.cat(shards, dim=dim) for shards, dim in zip(inputs, (1, 0)))
    expected = (a @ b.unsqueeze(1).unsqueeze(0)).sum(dim=1)
    for rows, result in launch(_own_products, 2, (program, inputs), backend="gloo", timeout=60):
        whole = rows[0]
        assert rows == [whole] + [whole // LAST_POST_PIECES] * LAST_POST_PIECES
        torch.testing.assert_close(result.reshape(expected.shape), expected)


def _run_checked(rank: int, world_size: int, program: str, inputs: list) -> str:
    evaluator = Evaluator(parse_module(program), rank=rank, world_size=world_size, check_hazards=True)
    try:
        evaluator.run([x[rank] for x in inputs])
    except ExecutionError as error:
        return str(error)
    return "ran"


def _pushes_not_joined_to_the_acquisition(rank: int, world_size: int, program: str, inputs: list) -> str:
    Ordering.acquisition = lambda self, buffer: None  # type: ignore[method-assign]  # this spawned rank only
    return _run_checked(rank, world_size, program, inputs)


def test_pushes_wait_for_their_symmetric_buffers_acquisition_wherever_it_is_allocated():
    """The acquisition (the wait for the peers' release of their previous run) runs on the
    copy engines' acquiring stream and every push joins it, so a loop's `via` buffer may be
    allocated in front of the sync loop (where convert-op-to-communication places it) or
    after it (where it was until 2026-11-26, when the acquisition was on the current stream
    and ordered only the last worker's pushes): both run clean under the hazard check,
    which catches a push that does not join it. (With the own part computed onto the
    peer's, a team of two has no `via`: here it is computed before the post.)"""
    program, inputs = _lowered_matmul_ar(" reduce-in-producer=false")
    via = next(line for line in program.splitlines(keepends=True) if "%via = hir.allocate symmetric" in line)
    sync_loop_end = program.index("\n", program.index("    } loc(", program.index(via))) + 1
    late = program[:sync_loop_end].replace(via, "") + via + program[sync_loop_end:]
    for text in (program, late):
        assert launch(_run_checked, 2, (text, inputs), backend="gloo", timeout=60) == ["ran"] * 2
    for message in launch(_pushes_not_joined_to_the_acquisition, 2, (program, inputs), backend="gloo", timeout=60):
        assert re.search(r"stream hazard: 'hir.allreduce' at matmul_ar.mlir:\d+:\d+ pushes into the peers' instances "
                         r"of a symmetric buffer on .* before its acquisition on the copy engines' acquiring stream",
                         message), message


def test_acquiring_a_symmetric_buffer_holds_back_the_pushes_not_the_current_stream():
    hazards = Hazards()
    ordering = Ordering(torch.device("cpu"), hazards=hazards)
    buffer = SymmetricTensor((0, 1), 0, [torch.zeros(4), torch.zeros(4)])
    waiting: list[object] = []
    ordering.acquire(buffer, ("buffer", "acquired"), waiting.append)
    assert len(waiting) == 1 and waiting[0] != hazards.current_stream()
    with pytest.raises(StreamHazard, match="before its acquisition on the copy engines' acquiring stream"):
        hazards.push(hazards.current_stream(), None, buffer.local)
    pushing = ordering.fork(phase=1)
    ordering.join(ordering.acquisition(buffer), pushing)
    hazards.push(pushing, None, buffer.local)
