"""Symmetric memory on CPU ranks (shared-memory files): every member sees every other
member's instance, and flags order a write in one rank before a read in another."""

from __future__ import annotations

import os
import stat

import pytest
import torch
import torch.distributed as dist

from hostir.runtime.launcher import launch
from hostir.runtime.symmetric_memory import Flags, SymmetricHeap, SymmetricMemoryError, peer_view


def world_heap(rank: int, world_size: int, timeout: float = 20.0) -> tuple[SymmetricHeap, tuple[int, ...]]:
    team = tuple(range(world_size))
    return SymmetricHeap(rank, torch.device("cpu"), lambda t: dist.group.WORLD, timeout), team


def _exchange(rank: int, world_size: int) -> list[list[float]]:
    """Every rank writes its rank into its own slot of every member's buffer, signals,
    waits for everyone, and returns what its own instance holds."""
    heap, team = world_heap(rank, world_size)
    buffer = heap.allocate(team, (world_size, 3), torch.float32)
    flags = Flags(heap, team, slots=1)
    for position in range(world_size):
        peer_view(buffer, buffer.local[rank], position).fill_(float(rank))
        if position != rank:
            flags.signal(position, 0)
    for position in range(world_size):
        if position != rank:
            flags.wait(position, 0)
    return buffer.local.tolist()


@pytest.mark.parametrize("world_size", [2, 4])
def test_every_member_writes_into_every_other_members_instance(world_size):
    results = launch(_exchange, world_size, backend="gloo", timeout=120)
    expected = [[float(r)] * 3 for r in range(world_size)]
    assert results == [expected] * world_size


def _handshake(rank: int, world_size: int) -> list[int]:
    """Ping-pong over one slot, 20 times: a flag is consumed (reset) by its waiter, so the
    same slot can be signalled again."""
    heap, team = world_heap(rank, world_size)
    box = heap.allocate(team, (1,), torch.int64)
    flags = Flags(heap, team, slots=2)
    peer = 1 - rank
    seen = []
    for turn in range(20):
        if turn % 2 == rank:
            peer_view(box, box.local, peer).fill_(turn)
            flags.signal(peer, 0)
            flags.wait(peer, 1)
        else:
            flags.wait(peer, 0)
            seen.append(int(box.local.item()))
            flags.signal(peer, 1)
    return seen


def test_flags_order_writes_between_ranks_and_are_reusable():
    seen = launch(_handshake, 2, backend="gloo", timeout=120)
    assert seen == [list(range(1, 20, 2)), list(range(0, 20, 2))]


def _wait_forever(rank: int, world_size: int) -> None:
    heap, team = world_heap(rank, world_size, timeout=1.0)
    flags = Flags(heap, team, slots=1)
    if rank == 0:
        try:
            flags.wait(1, 0)
        except SymmetricMemoryError as error:
            return str(error)
    return None


def test_a_wait_for_a_signal_that_never_comes_times_out_naming_the_peer():
    message, _ = launch(_wait_forever, 2, backend="gloo", timeout=120)
    assert message == "timed out after 1 s waiting for slot 0 from rank 1"


def test_a_team_of_one_needs_no_process_group():
    heap = SymmetricHeap(0, torch.device("cpu"), lambda team: None)
    tensor = heap.allocate((0,), (2, 2), torch.float32)
    assert tensor.local.shape == (2, 2) and tensor.peer(0) is tensor.local


def _sub_team_after_other_teams(rank: int, world_size: int) -> list[float]:
    """Ranks 1 and 2 share a buffer after rank 2 alone of them allocated for the team
    (2, 3): the members of a team have allocated different numbers of buffers before."""
    groups = {team: dist.new_group(list(team)) for team in ((2, 3), (1, 2))}  # every rank, in one order
    heap = SymmetricHeap(rank, torch.device("cpu"), groups.__getitem__, 20.0)
    if rank in (2, 3):
        heap.allocate((2, 3), (2,), torch.float32)
    if rank not in (1, 2):
        return []
    buffer = heap.allocate((1, 2), (2,), torch.float32)
    buffer.local.fill_(float(rank))
    dist.barrier(group=groups[(1, 2)])
    return buffer.peer(2 - rank).tolist()


def test_a_team_shares_a_buffer_whatever_its_members_allocated_for_other_teams():
    # Regression: the shared files were named by each rank's count of its allocations, so a
    # member that had allocated for another team looked for a directory that did not exist.
    assert launch(_sub_team_after_other_teams, 4, backend="gloo", timeout=120) == [[], [2.0, 2.0], [1.0, 1.0], []]


def _file_modes(rank: int, world_size: int) -> list[tuple[bool, int, int, bool]]:
    """Allocate once, recording for each shared file as the members map it: whether it is
    a regular file, its mode, its directory's mode; after, whether the directory is left."""
    mapped = []
    from_file = torch.from_file

    def recording(path, *args, **kwargs):
        status, directory = os.lstat(path), os.lstat(os.path.dirname(path))
        mapped.append((os.path.dirname(path), stat.S_ISREG(status.st_mode), stat.S_IMODE(status.st_mode),
                       stat.S_IMODE(directory.st_mode)))
        return from_file(path, *args, **kwargs)

    torch.from_file = recording  # in this rank only, which exits after
    heap, team = world_heap(rank, world_size)
    heap.allocate(team, (4,), torch.float32)
    dist.barrier()
    return [(*entry[1:], os.path.exists(entry[0])) for entry in mapped]


def test_shared_memory_files_are_private_and_gone_once_mapped():
    # Regression (issue 31, vulnerability 2): the files were created 0644 in /dev/shm,
    # where another user could open one and keep reading the run's tensors.
    for records in launch(_file_modes, 2, backend="gloo", timeout=120):
        assert records == [(True, 0o600, 0o700, False)] * 2
