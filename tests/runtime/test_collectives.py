"""Every collective of the hir dialect on 2 and 4 CPU ranks (gloo), checked against torch
computed on the unsharded data. All cases of one world size run in ONE launch (spawning
ranks costs seconds); each test then checks its own case."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

import pytest
import torch

from hostir.runtime import Job, run_spmd_batch

REDUCE = {"sum": lambda xs: torch.stack(xs).sum(0), "prod": lambda xs: torch.stack(xs).prod(0),
          "max": lambda xs: torch.stack(xs).amax(0), "min": lambda xs: torch.stack(xs).amin(0)}


def t(shape: str, team) -> str:
    mesh = ", ".join(map(str, sorted(team)))
    return f"!fusion.tensor<f32[{shape}], mesh=[{mesh}]>"


@dataclass
class Case:
    op: str
    team: tuple[int, ...]
    in_shape: str
    out_shape: str
    expected: Callable[[dict[int, torch.Tensor]], dict[int, torch.Tensor]]
    """member inputs by rank -> the outputs that must hold, by rank"""
    root: int | None = None
    reduction: str | None = None
    in_mesh: tuple[int, ...] | None = None

    def program(self) -> str:
        in_t, out_t = t(self.in_shape, self.in_mesh or self.team), t(self.out_shape, self.team)
        extras = (f" root {self.root}" if self.root is not None else "") + (f" op {self.reduction}" if self.reduction else "")
        team = ", ".join(map(str, self.team))
        return f"""hir.program @main(%x: {in_t}) -> {out_t} {{
  %o = hir.allocate : {out_t}
  %w = hir.{self.op} %x -> %o team [{team}]{extras} : {in_t} -> {out_t}
  hir.wait %w
  hir.return %o : {out_t}
}}"""


def local_inputs(case: Case, world: int, seed: int) -> dict[int, torch.Tensor]:
    shape = [int(s) for s in case.in_shape.split(",")]
    generator = torch.Generator().manual_seed(seed)
    data = {r: torch.randn(shape, generator=generator) for r in range(world)}
    if case.reduction == "prod":
        data = {r: x.abs() + 0.5 for r, x in data.items()}
    return {r: x for r, x in data.items() if r in (case.in_mesh or case.team)}


def flat_chunks(x: torch.Tensor, n: int) -> list[torch.Tensor]:
    return list(x.reshape(n, -1))


def allgather(team):
    return lambda xs: {r: torch.cat([xs[m].reshape(-1) for m in team]) for r in team}


def allreduce(team, kind):
    return lambda xs: {r: REDUCE[kind]([xs[m] for m in team]) for r in team}


def reduce_scatter(team, kind):
    return lambda xs: {r: REDUCE[kind]([flat_chunks(xs[m], len(team))[i] for m in team]) for i, r in enumerate(team)}


def scatter(team, root):
    return lambda xs: {r: flat_chunks(xs[root], len(team))[i] for i, r in enumerate(team)}


def gather(team, root):
    return lambda xs: {root: torch.cat([xs[m].reshape(-1) if m in xs else torch.zeros(next(iter(xs.values())).numel()) for m in team])}


def gather_without_root(team, root):
    return lambda xs: {root: torch.cat([xs[m].reshape(-1) for m in team if m != root])}


def broadcast(team, root):
    return lambda xs: {r: xs[root] for r in team}


def reduce(team, root, kind):
    return lambda xs: {root: REDUCE[kind]([xs[m] for m in team])}


def send_recv(sender, receiver):
    return lambda xs: {receiver: xs[sender]}


def all_to_all(team):
    n = len(team)
    return lambda xs: {r: torch.cat([flat_chunks(xs[m], n)[j] for m in team]) for j, r in enumerate(team)}


def cases(world: int) -> dict[str, Case]:
    everyone = tuple(range(world))
    n = world
    subset = (3, 1) if world == 4 else (1, 0)  # a strict subset of 4, or the world in reverse order
    found = {
        "allgather": Case("allgather", everyone, "2, 3", f"{2 * n}, 3", allgather(everyone)),
        "allgather_subset": Case("allgather", subset, "2, 3", "4, 3", allgather(subset)),
        "allreduce_sum": Case("allreduce", everyone, "4, 3", "4, 3", allreduce(everyone, "sum"), reduction="sum"),
        "allreduce_max_subset": Case("allreduce", subset, "4, 3", "4, 3", allreduce(subset, "max"), reduction="max"),
        "reduce_scatter": Case("reduce_scatter", everyone, f"{n}, 4", "4", reduce_scatter(everyone, "sum"), reduction="sum"),
        "reduce_scatter_subset_min": Case("reduce_scatter", subset, "2, 4", "4", reduce_scatter(subset, "min"), reduction="min"),
        "scatter_root_last": Case("scatter", everyone, f"{n}, 3", "3", scatter(everyone, n - 1), root=n - 1),
        "scatter_subset": Case("scatter", subset, "2, 3", "3", scatter(subset, subset[0]), root=subset[0]),
        "gather_root_1": Case("gather", everyone, "3", f"{n}, 3", gather(everyone, 1), root=1),
        "gather_subset": Case("gather", subset, "3", "2, 3", gather(subset, subset[1]), root=subset[1]),
        "broadcast_root_1": Case("broadcast", everyone, "2, 5", "2, 5", broadcast(everyone, 1), root=1),
        "broadcast_subset": Case("broadcast", subset, "2, 5", "2, 5", broadcast(subset, subset[0]), root=subset[0]),
        "reduce_sum_root_last": Case("reduce", everyone, "3, 2", "3, 2", reduce(everyone, n - 1, "sum"), root=n - 1, reduction="sum"),
        "reduce_prod_subset": Case("reduce", subset, "3, 2", "3, 2", reduce(subset, subset[1], "prod"), root=subset[1], reduction="prod"),
        "send_recv": Case("send_recv", (1, 0), "2, 3", "2, 3", send_recv(1, 0), root=1),
        "all_to_all": Case("all_to_all", everyone, f"{n}, 2", f"{n}, 2", all_to_all(everyone)),
        "all_to_all_subset": Case("all_to_all", subset, "2, 2", "2, 2", all_to_all(subset)),
    }
    if world == 4:
        # The root holds no input (input mesh [0, 2]): it contributes zeros.
        found["gather_member_without_input"] = Case("gather", (0, 1, 2), "3", "3, 3", gather((0, 1, 2), 1), root=1,
                                                     in_mesh=(0, 2))
        # A root outside the senders' mesh, whose output has no slot for itself.
        found["gather_root_without_slot"] = Case("gather", (1, 2, 0), "3", "2, 3", gather_without_root((1, 2, 0), 0),
                                                 root=0, in_mesh=(1, 2))
        found["send_recv_3_to_2"] = Case("send_recv", (3, 2), "4", "4", send_recv(3, 2), root=3)
    return found


RING = """!t = !fusion.tensor<f32[6]>
hir.program @main(%x: !t, %next: index, %prev: index, %send_first: i1) -> !t {
  %o = hir.allocate : !t
  scf.if %send_first {
    %s = hir.send %x, %next : !t
    %r = hir.recv %o, %prev : !t
    hir.wait %s
    hir.wait %r
  } else {
    %r = hir.recv %o, %prev : !t
    %s = hir.send %x, %next : !t
    hir.wait %r
    hir.wait %s
  }
  hir.return %o : !t
}"""
"""Point-to-point ring: every rank sends to rank + 1 and receives from rank - 1 (peers are
program inputs: the same program text runs on every rank). With NCCL a send completes only
once its peer posts the matching receive and each rank's operations run in order, so, as
in nvFuser's RingPairwiseExchange, rank 0 sends first and the others receive first."""


def ring_inputs(world: int) -> tuple[list[torch.Tensor], list[list]]:
    data = [torch.full((6,), float(r)) for r in range(world)]
    return data, [[data[r], (r + 1) % world, (r - 1) % world, r == 0] for r in range(world)]


def shift_program(team: tuple[int, ...]) -> str:
    """Every offset 0..2D-1 (D = team size) in turn, offset k into row k of the output."""
    n = len(team)
    x, o, row = t("6", team), t(f"{2 * n}, 6", team), t("6", team)
    members = ", ".join(map(str, team))
    return f"""hir.program @main(%x: {x}) -> {o} {{
  %o = hir.allocate : {o}
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %rows = arith.constant {2 * n} : index
  scf.for %k = %c0 to %rows step %c1 {{
    %row = hir.alias_select %o[%k] axis 0 : {o} -> {row}
    %w = hir.shift %x -> %row team [{members}] offset %k : {x} -> {row}
    hir.wait %w
  }}
  hir.return %o : {o}
}}"""


def shift_teams(world: int) -> list[tuple[int, ...]]:
    """The world, and a team in another order than the ranks (a subset of 4)."""
    return [tuple(range(world)), (3, 0, 1) if world == 4 else (1, 0)]


def run_cases(world: int):
    found = cases(world)
    jobs, data = [], {}
    for seed, (name, case) in enumerate(found.items()):
        xs = local_inputs(case, world, seed)
        data[name] = xs
        jobs.append(Job(case.program(), [[xs.get(r)] for r in range(world)]))
    ring, ring_args = ring_inputs(world)
    jobs.append(Job(RING, ring_args))
    shifted = {team: {r: torch.full((6,), float(r)) for r in team} for team in shift_teams(world)}
    jobs += [Job(shift_program(team), [[xs.get(r)] for r in range(world)]) for team, xs in shifted.items()]
    results = run_spmd_batch(jobs, world, backend="gloo", timeout=240)
    by_name = {name: (found[name], data[name], results[k]) for k, name in enumerate(found)}
    by_name["ring"] = (ring, results[len(found)])
    by_name["shift"] = (shifted, results[len(found) + 1 :])
    return by_name


@pytest.fixture(scope="module")
def world2():
    return run_cases(2)


@pytest.fixture(scope="module")
def world4():
    return run_cases(4)


def check(case_name: str, results) -> None:
    case, xs, per_rank = results[case_name]
    expected = case.expected(xs)
    for rank, want in expected.items():
        got = per_rank[rank].outputs[0]
        torch.testing.assert_close(got.reshape(-1), want.reshape(-1), msg=f"{case_name} rank {rank}")
    for rank, result in enumerate(per_rank):
        if rank not in case.team:
            assert result.outputs == [None], f"{case_name}: rank {rank} is outside mesh {case.team}"


@pytest.mark.parametrize("name", list(cases(2)))
def test_two_ranks(name, world2):
    check(name, world2)


@pytest.mark.parametrize("name", list(cases(4)))
def test_four_ranks(name, world4):
    check(name, world4)


@pytest.mark.parametrize("world", [2, 4])
def test_send_recv_ring(world, world2, world4):
    ring, per_rank = (world2 if world == 2 else world4)["ring"]
    for rank, result in enumerate(per_rank):
        assert torch.equal(result.outputs[0], ring[(rank - 1) % world])


@pytest.mark.parametrize("world", [2, 4])
def test_shift_by_every_offset(world, world2, world4):
    """Member p's row k holds the input of the member at position (p + k) mod D; offsets
    that are multiples of D copy locally; ranks outside the team hold nothing."""
    shifted, per_team = (world2 if world == 2 else world4)["shift"]
    for (team, xs), per_rank in zip(shifted.items(), per_team):
        for rank, result in enumerate(per_rank):
            if rank not in team:
                assert result.outputs == [None]
                continue
            p = team.index(rank)
            expected = torch.stack([xs[team[(p + k) % len(team)]] for k in range(2 * len(team))])
            assert torch.equal(result.outputs[0], expected), f"team {team} rank {rank}"
