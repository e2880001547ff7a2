"""Result sets (runtime/result_sets.py) on CPU ranks: a copy-engine all-reduce whose output
is a program result pushes into the peers' results, so the members agree each run on the
set of buffers it computes into, and no result a caller holds is ever overwritten."""

from __future__ import annotations

import random
import re
import time

import pytest
import torch
import torch.distributed as dist
from test_copy_engine import MATMUL_AR

from hostir.passes import lower
from hostir.runtime import Evaluator, shard_tensor
from hostir.runtime.graphs import CUDA_GRAPH, EAGER
from hostir.runtime.launcher import launch
from hostir.runtime.result_sets import SCRATCH, HostAgreement, storage_uses
from hostir.runtime.symmetric_memory import SymmetricHeap, SymmetricMemoryError
from hostir_dialect import hir
from hostir_dialect.context import parse_module
from hostir_dialect.diagnostics import HostIRError, located_text

RUNS = 6


def test_storage_uses_count_every_alias_of_a_result():
    buffer = torch.empty(4)
    (alone,) = storage_uses([buffer])
    alias = buffer.detach()
    view = alias[1:]
    assert storage_uses([buffer]) == [alone + 2]
    del alias
    assert storage_uses([buffer]) == [alone + 2]  # the view keeps its base
    del view
    assert storage_uses([buffer, None]) == [alone, 0]


def _agree(rank: int, world_size: int, masks: list[list[int]]) -> list[int]:
    heap = SymmetricHeap(rank, torch.device("cpu"), lambda team: dist.group.WORLD, timeout=30)
    agreement = HostAgreement(heap, tuple(range(world_size)), timeout=30)
    agreed = []
    for run, per_rank in enumerate(masks):
        if rank == run % world_size:  # one member late, a different one each run
            time.sleep(0.002)
        agreement.offer(per_rank[rank])  # as a run ends
        agreed.append(agreement.agreed())  # as the next begins
    return agreed


@pytest.mark.parametrize("world_size", [2, 3])
def test_the_members_agree_on_the_and_of_their_masks_run_after_run(world_size):
    generator = random.Random(world_size)
    masks = [[generator.randrange(4) for _ in range(world_size)] for _ in range(40)]
    expected = []
    for per_rank in masks:
        agreed = 3
        for mask in per_rank:
            agreed &= mask
        expected.append(agreed)
    assert launch(_agree, world_size, (masks,), backend="gloo", timeout=120) == [expected] * world_size


def _offer_while_the_peer_sleeps(rank: int, world_size: int) -> tuple[float, float, int]:
    heap = SymmetricHeap(rank, torch.device("cpu"), lambda team: dist.group.WORLD, timeout=30)
    agreement = HostAgreement(heap, tuple(range(world_size)), timeout=30)
    dist.barrier()
    if rank == 1:
        time.sleep(0.5)
    start = time.monotonic()
    agreement.offer(0b011 if rank == 0 else 0b101)
    offered = time.monotonic()
    agreed = agreement.agreed()
    return offered - start, time.monotonic() - offered, agreed


def test_an_offer_does_not_wait_for_the_others_and_the_agreement_does():
    (offered, waited, agreed), (_, _, agreed_late) = launch(_offer_while_the_peer_sleeps, 2, backend="gloo",
                                                            timeout=60)
    assert offered < 0.1
    assert waited > 0.3  # for the peer's offer
    assert agreed == agreed_late == 0b001


def _one_member_runs_once_more(rank: int, world_size: int) -> str:
    heap = SymmetricHeap(rank, torch.device("cpu"), lambda team: dist.group.WORLD, timeout=30)
    agreement = HostAgreement(heap, tuple(range(world_size)), timeout=0.2)
    agreement.offer(1)
    agreement.agreed()
    if rank == 0:
        agreement.offer(1)
        with pytest.raises(SymmetricMemoryError) as error:
            agreement.agreed()
        return str(error.value)
    return "stopped"


def test_a_member_that_runs_more_often_than_its_peers_times_out_naming_the_peer():
    message, stopped = launch(_one_member_runs_once_more, 2, backend="gloo", timeout=60)
    assert message == ("timed out after 0.2 s waiting for rank 1 to end run 2 of a program whose peers write "
                       "into its results (every rank runs it as often)")
    assert stopped == "stopped"


def _lowered_matmul_ar() -> tuple[str, list]:
    module = parse_module(MATMUL_AR, "matmul_ar.mlir")
    lower(module, pipeline="hostir-lower{transport=copy-engine symmetric-allreduce-output=true}")
    (function,) = [op for op in module.ops if isinstance(op, hir.ProgramOp)]
    return located_text(module), [arg.type for arg in function.args]


def _whole_inputs(run: int) -> list[torch.Tensor]:
    generator = torch.Generator().manual_seed(run)
    return [torch.randn(2, 2, 2, 2, 4, generator=generator), torch.randn(2, 4, 3, generator=generator)]


def _expected(run: int) -> torch.Tensor:
    a, b = _whole_inputs(run)
    return torch.einsum("sdijk,dkn->sijn", a, b)


def _runs_holding(rank: int, world_size: int, program: str, types: list, holds: str,
                  cuda_graph: bool | None = None) -> dict:
    """Runs the program RUNS times (on this rank's GPU under NCCL); `holds` says which
    results this rank's caller keeps: "latest" (`y = f(x)` in a loop), "all", "all on
    rank 0" or "the first on rank 0". Returns how it ran, the sets chosen and the kept
    results, by run."""
    device = torch.device("cuda", rank) if dist.get_backend() == "nccl" else torch.device("cpu")
    evaluator = Evaluator(parse_module(program), rank=rank, world_size=world_size, device=device,
                          cuda_graph=cuda_graph, check_hazards=device.type == "cpu")
    keeps = {"latest": lambda run: run == RUNS - 1, "all": lambda run: True,
             "all on rank 0": lambda run: rank == 0 or run == RUNS - 1,
             "the first on rank 0": lambda run: (rank == 0 and run == 0) or run == RUNS - 1}[holds]
    kept, chosen, latest = {}, [], None
    for run in range(RUNS):
        inputs = [shard_tensor(x, t, rank).to(device) for x, t in zip(_whole_inputs(run), types)]
        (result,) = evaluator.run(inputs)
        chosen.append(evaluator.result_sets.chosen)  # type: ignore[union-attr]  # the program has result sets
        if keeps(run):
            kept[run] = result
        latest = result  # noqa: F841  # held until the next run returns, as `y = f(x)` holds it
        del result
    return {"mode": evaluator.graph_mode, "chosen": chosen, "kept": {run: k.cpu() for run, k in kept.items()}}


HOLDING = [
    # when a run ends, the caller holds its result and the previous one: the next takes the third
    ("latest", [0, 1, 2, 0, 1, 2]),
    ("all", [0, 1, 2, SCRATCH, SCRATCH, SCRATCH]),
    # rank 1 frees every set, rank 0 none: both take rank 0's free ones, then copy
    ("all on rank 0", [0, 1, 2, SCRATCH, SCRATCH, SCRATCH]),
    # set 0 stays held on rank 0 only: when run 2 ends, rank 1 alone would take set 0 for
    # run 3 (its only free set, as set 2 is rank 0's only one after run 3); both copy instead
    ("the first on rank 0", [0, 1, 2, SCRATCH, 1, 2]),
]


def _check_holding(per_rank: list[dict], chosen: list[int]) -> None:
    for rank, result in enumerate(per_rank):
        assert result["chosen"] == chosen
        assert RUNS - 1 in result["kept"]
        for run, kept in result["kept"].items():
            torch.testing.assert_close(kept, _expected(run), rtol=2e-3, atol=2e-3, msg=f"rank {rank}, run {run}")


@pytest.mark.parametrize("holds, chosen", HOLDING)
def test_results_the_peers_write_into_are_never_overwritten_while_held(holds, chosen):
    program, types = _lowered_matmul_ar()
    assert "%c = hir.allocate symmetric" in program  # the all-reduce's output: the peers push into it
    _check_holding(launch(_runs_holding, 2, (program, types, holds), backend="gloo", timeout=120), chosen)


@pytest.mark.gpu
@pytest.mark.skipif(torch.cuda.device_count() < 2, reason="needs 2 CUDA GPUs")
@pytest.mark.parametrize("cuda_graph", [None, False])
@pytest.mark.parametrize("holds, chosen", HOLDING)
def test_gpu_results_the_peers_write_into_are_never_overwritten_while_held(holds, chosen, cuda_graph):
    """On GPUs, replayed from CUDA graphs (one per result set) by default, or eagerly."""
    program, types = _lowered_matmul_ar()
    per_rank = launch(_runs_holding, 2, (program, types, holds, cuda_graph), backend="nccl", timeout=180)
    assert {result["mode"] for result in per_rank} == {CUDA_GRAPH if cuda_graph is None else EAGER}
    _check_holding(per_rank, chosen)


def _run_with_graph_option(rank: int, world_size: int, program: str, types: list, cuda_graph: bool) -> list:
    evaluator = Evaluator(parse_module(program), rank=rank, world_size=world_size, cuda_graph=cuda_graph,
                          check_hazards=True)
    results = []
    for run in range(3):
        inputs = [shard_tensor(x, t, rank) for x, t in zip(_whole_inputs(run), types)]
        results.append(evaluator.run(inputs)[0].clone())
    return results


@pytest.mark.parametrize("cuda_graph", [False, True])
def test_every_graph_option_computes_the_all_reduce_into_the_peers_results(cuda_graph):
    program, types = _lowered_matmul_ar()
    for results in launch(_run_with_graph_option, 2, (program, types, cuda_graph), backend="gloo", timeout=120):
        for run, result in enumerate(results):
            torch.testing.assert_close(result, _expected(run))


def _compile(rank: int, world_size: int, program: str) -> str:
    try:
        Evaluator(parse_module(program, "view.mlir"), rank=rank, world_size=world_size)
    except HostIRError as error:
        return str(error)
    return "compiled"


def test_a_program_returning_a_view_of_a_symmetric_buffer_is_refused():
    program, _ = _lowered_matmul_ar()
    ret = program[program.index("hir.return %c"):]
    view = ret.replace("hir.return %c :", "hir.return %c_view :", 1)
    declared = program[:program.index("hir.return %c")]
    c_type = declared[declared.index("%c = hir.allocate symmetric : ") + len("%c = hir.allocate symmetric : "):]
    c_type = c_type[:c_type.index(" loc(")]
    text = declared + f"%c_view = hir.alias_chunk %c[%c0] axis 0 parts 1 : {c_type} -> {c_type}\n    " + view
    for message in launch(_compile, 2, (text,), backend="gloo", timeout=60):
        assert re.fullmatch(r"matmul_ar.mlir:\d+:\d+: error: 'hir.return' op returns result #0, which shares the memory "
                            r"of a symmetric buffer without being it; the next run would overwrite it. Return the "
                            r"buffer itself", message), message


def _negated_into_a_returned_symmetric_buffer(world_size: int) -> str:
    """A hand-written program returning a symmetric buffer that no collective writes: only
    the result sets keep one run from overwriting the results of another."""
    t = f"!fusion.tensor<f32[4], mesh={list(range(world_size))}>"
    return f"""
hir.program @negated(%x: {t}) -> {t} {{
  %b = hir.allocate symmetric : {t}
  %c = fusion.neg %x into %b : {t} -> {t}
  hir.return %b : {t}
}}
"""


def _keeps_every_result(rank: int, world_size: int, program: str) -> dict:
    evaluator = Evaluator(parse_module(program), rank=rank, world_size=world_size, check_hazards=True)
    kept, chosen = [], []
    for run in range(RUNS):
        kept.append(evaluator.run([torch.full((4,), float(run))])[0])
        chosen.append(evaluator.result_sets.chosen)  # type: ignore[union-attr]  # it returns a symmetric buffer
    return {"chosen": chosen, "kept": [k.clone() for k in kept]}


@pytest.mark.parametrize("world_size", [1, 2])
def test_a_returned_symmetric_buffer_is_a_result_set_on_one_rank_and_on_several(world_size):
    program = _negated_into_a_returned_symmetric_buffer(world_size)
    for result in launch(_keeps_every_result, world_size, (program,), backend="gloo", timeout=120):
        assert result["chosen"] == [0, 1, 2, SCRATCH, SCRATCH, SCRATCH]
        for run, kept in enumerate(result["kept"]):
            torch.testing.assert_close(kept, torch.neg(torch.full((4,), float(run))))
