"""Unsigned 64-bit integers (nvFuser's philox seeds and offsets) in and out of spawned CPU
ranks and through their collectives: gloo moves no unsigned type wider than a byte
("Invalid scalar type"), so collectives move their bits as int64's; pickle rebuilds no
uint64 tensor, so the launcher hands inputs over with torch.save."""

from __future__ import annotations

import pytest
import torch

from hostir.runtime import Job, run_spmd_batch
from hostir.runtime.communicator import transfer_dtype
from hostir.runtime.launcher import SpmdError
from hostir_dialect.fusion import ReduceKind


def program(op: str, in_shape: str, out_shape: str, extras: str = "") -> str:
    in_t, out_t = (f"!fusion.tensor<ui64[{shape}], mesh=[0, 1]>" for shape in (in_shape, out_shape))
    return f"""hir.program @main(%x: {in_t}) -> {out_t} {{
  %o = hir.allocate : {out_t}
  %w = hir.{op} %x -> %o team [0, 1]{extras} : {in_t} -> {out_t}
  hir.wait %w
  hir.return %o : {out_t}
}}"""


CASES = {
    "broadcast": (program("broadcast", "3", "3", " root 0"), lambda xs: xs[0]),
    "allgather": (program("allgather", "3", "6"), lambda xs: torch.cat([xs[0], xs[1]])),
    "allreduce sum": (program("allreduce", "3", "3", " op sum"),
                      lambda xs: (xs[0].view(torch.int64) + xs[1].view(torch.int64)).view(torch.uint64)),
}
MAXIMUM = program("allreduce", "3", "3", " op max")


@pytest.fixture(scope="module")
def results():
    data = {r: torch.tensor([2**63 + r, r + 1, 2**64 - 1 - r], dtype=torch.uint64) for r in range(2)}  # beyond int64
    jobs = [Job(text, [[data[r]] for r in range(2)]) for text, _ in CASES.values()]
    ran = run_spmd_batch(jobs, 2, backend="gloo", timeout=240)
    return data, dict(zip(CASES, ran))


@pytest.mark.parametrize("name", list(CASES))
def test_uint64_values_survive_the_collective(name, results):
    data, ran = results
    for rank in range(2):
        got, want = ran[name][rank].outputs[0], CASES[name][1](data)
        assert got.dtype == torch.uint64 and torch.equal(got.view(torch.int64), want.view(torch.int64)), f"{name} rank {rank}"


def test_a_maximum_of_uint64_values_on_gloo_is_refused_naming_the_op():
    job = Job(MAXIMUM, [[torch.tensor([1, 2, 3], dtype=torch.uint64)] for _ in range(2)])
    with pytest.raises(SpmdError, match="'hir.allreduce' op takes the max of torch.uint64 values, which gloo does not compare"):
        run_spmd_batch([job], 2, backend="gloo", timeout=240)


def test_only_moved_or_added_unsigned_values_change_type():
    """Two's complement adds and multiplies as unsigned arithmetic does (mod 2^64); a
    maximum compares, so it keeps the unsigned type."""
    assert transfer_dtype(torch.uint64, None) == torch.int64 == transfer_dtype(torch.uint64, ReduceKind.SUM)
    assert transfer_dtype(torch.uint64, ReduceKind.MAX) == torch.uint64
    assert transfer_dtype(torch.uint8, None) == torch.uint8 and transfer_dtype(torch.float32, None) == torch.float32
