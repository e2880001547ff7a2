"""The copy-engine algorithms on CPU ranks (shared-memory symmetric buffers): each
collective gives what its NCCL counterpart gives, run after run."""

from __future__ import annotations

import pytest
import torch
import torch.distributed as dist

from hostir.runtime.copy_engine import (
    CopyEngineAllgather,
    CopyEngineAllreduce,
    CopyEngineReduceScatter,
    Ordering,
)
from hostir.runtime.launcher import launch
from hostir.runtime.symmetric_memory import Flags, SymmetricHeap
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


@pytest.mark.parametrize("world_size", [2, 4])
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
