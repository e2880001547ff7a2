"""Symmetric memory: buffers that every member of a team allocates alike and that each
member reads and writes in the others' memory, plus flags that members set in each other's
memory to say, in stream order, that data has arrived or that a buffer is free again.

This is what the copy-engine transport of `hir` collectives runs on (docs/copy_engine.md).

- CUDA: `torch.distributed._symmetric_memory` maps every member's buffer into this process
  (NVLink peer mappings), so a `copy_` between a local tensor and a peer's is a
  `cudaMemcpyAsync` on the copy engines, using no SM. Flags are 32-bit words in a symmetric
  buffer, written with `cuStreamWriteValue32` and waited for with `cuStreamWaitValue32`
  (CUDA stream memory operations, from `cuda-bindings`): neither uses an SM, and both can be
  captured in a CUDA graph.
- CPU: each member's buffer is a file in shared memory (`/dev/shm`) that every member maps;
  work runs synchronously in program order, so a signal is a plain store and a wait spins
  (with back-off and a timeout) until the flag is set.

`SymmetricHeap.allocate_on_host` gives every member of a team on one host a tensor in
shared host memory (the CPU backend's files, on GPUs too), which the members read and write
with plain loads and stores: the agreement on result sets (runtime/result_sets.py) runs there.

Every member must create the same buffers in the same order (creation is collective over
the team's process group), as process groups are.

Flags are binary and reset by their waiter (`wait` sets the flag back to 0), so a program
replayed from a CUDA graph writes and waits for the same values every run.
"""

from __future__ import annotations

import math
import os
import tempfile
import time
import uuid
from collections.abc import Sequence
from pathlib import Path

import torch
import torch.distributed as dist


class SymmetricMemoryError(RuntimeError):
    """Symmetric memory cannot be set up here, or a wait for a peer timed out."""


class SymmetricTensor:
    """One member's view of a tensor allocated on every member of `team`.

    `local` is this rank's instance; `peer(position)` is the instance of the member at
    `position` in the team (this rank's own instance for its own position).
    """

    def __init__(self, team: tuple[int, ...], position: int, instances: Sequence[torch.Tensor]):
        self.team = team
        self.position = position
        self._instances = list(instances)

    @property
    def local(self) -> torch.Tensor:
        return self._instances[self.position]

    def peer(self, position: int) -> torch.Tensor:
        return self._instances[position]


def peer_view(symmetric: SymmetricTensor, view: torch.Tensor, position: int) -> torch.Tensor:
    """The view of member `position`'s instance that `view` is of this rank's instance:
    same shape, strides and offset (`view` must share storage with `symmetric.local`)."""
    local = symmetric.local
    offset = view.storage_offset() - local.storage_offset()
    if view.untyped_storage().data_ptr() != local.untyped_storage().data_ptr():
        raise SymmetricMemoryError("the tensor is not a view of a symmetric buffer")
    target = symmetric.peer(position)
    return target.as_strided(view.shape, view.stride(), target.storage_offset() + offset)


class Flags:
    """`slots` flags per member of `team`, in symmetric memory: flag (slot, source) of a
    member is set by the member at position `source`."""

    def __init__(self, heap: SymmetricHeap, team: tuple[int, ...], slots: int):
        self.heap = heap
        self.team = team
        self.size = len(team)
        self.memory = heap.allocate(team, (slots, self.size), torch.int32)
        self.memory.local.zero_()
        me = self.memory.position
        # Every flag as a one-element view, made once: a run indexes no tensor.
        self._outgoing = {(p, slot): self.memory.peer(p)[slot, me] for p in range(self.size) for slot in range(slots)}
        self._incoming = {(p, slot): self.memory.local[slot, p] for p in range(self.size) for slot in range(slots)}
        heap.barrier(team)

    def signal(self, position: int, slot: int, stream=None) -> None:
        """Set flag (slot, me) of member `position`, after the prior work of `stream`
        (default: the current stream)."""
        self.heap.write_flag(self._outgoing[position, slot], 1, stream)

    def wait(self, position: int, slot: int, stream=None) -> None:
        """`stream` (default: the current stream) waits until member `position` set flag
        (slot, it), then clears it."""
        self.heap.wait_flag(self._incoming[position, slot], f"slot {slot} from rank {self.team[position]}", stream)

    def set_local(self, slot: int, value: int) -> None:
        """Set all of this rank's flags of `slot` now (the initial state of a handshake)."""
        self.memory.local[slot].fill_(value)


class SymmetricHeap:
    """Creates symmetric tensors and moves flags for one rank; see the module docstring."""

    def __init__(self, rank: int, device: torch.device, groups, timeout: float = 60.0):
        """`groups(team)` is the process group of a team (None for a team of one)."""
        self.rank = rank
        self.device = device
        self.groups = groups
        self.timeout = timeout
        self._backend = _CudaBackend(device) if device.type == "cuda" else _SharedFileBackend(device)

    def allocate(self, team: tuple[int, ...], shape: Sequence[int], dtype: torch.dtype) -> SymmetricTensor:
        """A tensor of `shape` and `dtype` on every member of `team` (collective over the team)."""
        return self._allocate(self._backend, self.device, team, shape, dtype)

    def allocate_on_host(self, team: tuple[int, ...], shape: Sequence[int], dtype: torch.dtype) -> SymmetricTensor:
        """A tensor of `shape` and `dtype`, zeroed, in the host memory of every member of
        `team`, which every member reads and writes with plain loads and stores: the members
        share a host, as the members of a copy-engine team do (collective over the team)."""
        return self._allocate(_SharedFileBackend(self.device), torch.device("cpu"), team, shape, dtype)

    def _allocate(self, backend, device: torch.device, team: tuple[int, ...], shape: Sequence[int],
                  dtype: torch.dtype) -> SymmetricTensor:
        if self.rank not in team:
            raise SymmetricMemoryError(f"rank {self.rank} allocates symmetric memory of team {list(team)} without being in it")
        position = team.index(self.rank)
        if len(team) == 1:
            return SymmetricTensor(team, 0, [torch.zeros(tuple(shape), dtype=dtype, device=device)])
        instances = backend.allocate(self.groups(team), team, position, tuple(shape), dtype)
        return SymmetricTensor(team, position, instances)

    def barrier(self, team: tuple[int, ...]) -> None:
        """Every member of the team got here, with its device work so far done (flags it
        initialized are set before a peer may write them)."""
        if self.device.type == "cuda":
            torch.cuda.synchronize(self.device)
        if len(team) > 1:
            dist.barrier(group=self.groups(team))

    def write_flag(self, flag: torch.Tensor, value: int, stream=None) -> None:
        self._backend.write_flag(flag, value, stream)

    def wait_flag(self, flag: torch.Tensor, what: str, stream=None) -> None:
        self._backend.wait_flag(flag, self.timeout, what, stream)


# --------------------------------------------------------------------------- #
# Backends
# --------------------------------------------------------------------------- #


class _SharedFileBackend:
    """CPU ranks: one file per member in shared memory, mapped by every member (created
    zeroed). `device`: where the team's process group moves tensors (its token)."""

    def __init__(self, device: torch.device):
        self.device = device

    def allocate(self, group, team, position, shape, dtype) -> list[torch.Tensor]:
        # The files hold this run's tensors: nobody else may open them, even for the
        # moment they have a name. They live in a directory only this user may enter,
        # under a random name, and each is created anew (never an existing file or a
        # link someone planted), readable and writable by this user only.
        # Named by the team's fresh token alone: members may have allocated for other teams
        # before (a sub-mesh's), so no count of one rank's allocations names it for all.
        token = _agree_on_token(group, team, self.device)
        base = Path("/dev/shm") if Path("/dev/shm").is_dir() else Path(tempfile.gettempdir())
        directory = base / f"hostir-{token}"
        if position == 0:
            os.mkdir(directory, 0o700)
        dist.barrier(group=group)  # the directory exists
        paths = [directory / str(member) for member in range(len(team))]
        numel = math.prod(shape)
        nbytes = max(1, numel * torch.empty((), dtype=dtype).element_size())
        descriptor = os.open(paths[position], os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_RDWR, 0o600)
        try:
            os.ftruncate(descriptor, nbytes)
        finally:
            os.close(descriptor)
        dist.barrier(group=group)  # every file exists
        instances = [torch.from_file(str(path), shared=True, size=numel, dtype=dtype).view(shape) for path in paths]
        dist.barrier(group=group)  # every member mapped every file: the names can go
        if position == 0:
            for path in paths:
                path.unlink()
            directory.rmdir()
        return instances

    def write_flag(self, flag: torch.Tensor, value: int, stream=None) -> None:
        flag.fill_(value)

    def wait_flag(self, flag: torch.Tensor, timeout: float, what: str, stream=None) -> None:
        deadline = time.monotonic() + timeout
        pause = 1e-6
        while int(flag.item()) != 1:
            if time.monotonic() > deadline:
                raise SymmetricMemoryError(f"timed out after {timeout:g} s waiting for {what}")
            time.sleep(pause)
            pause = min(2 * pause, 1e-3)
        flag.fill_(0)


def _agree_on_token(group, team: tuple[int, ...], device: torch.device) -> int:
    """A random number every member of the team knows (names the shared files)."""
    token = torch.tensor([uuid.uuid4().int & (2**62 - 1)], dtype=torch.int64, device=device)
    dist.broadcast(token, src=team[0], group=group)
    return int(token.item())


class _CudaBackend:
    """GPUs of one host: torch symmetric memory and CUDA stream memory operations."""

    def __init__(self, device: torch.device):
        try:
            from cuda.bindings import driver
        except ImportError as error:
            raise SymmetricMemoryError(
                "the copy-engine transport on GPUs needs cuda-bindings (pip install cuda-bindings): "
                "it waits for peers with cuStreamWaitValue32, which torch does not expose"
            ) from error
        import torch.distributed._symmetric_memory as symm_mem

        self.driver = driver
        self.symm_mem = symm_mem
        self.device = device
        self._streams: dict[int, object] = {}
        self._addresses: dict[int, object] = {}

    def allocate(self, group, team, position, shape, dtype) -> list[torch.Tensor]:
        local = self.symm_mem.empty(*shape, dtype=dtype, device=self.device)
        handle = self.symm_mem.rendezvous(local, group)
        return [local if member == position else handle.get_buffer(member, shape, dtype)
                for member in range(len(team))]

    def _stream(self, stream: torch.cuda.Stream | None):
        handle = (stream or torch.cuda.current_stream(self.device)).cuda_stream
        found = self._streams.get(handle)
        if found is None:
            found = self._streams[handle] = self.driver.CUstream(handle)
        return found

    def _address(self, flag: torch.Tensor):
        pointer = flag.data_ptr()
        found = self._addresses.get(pointer)
        if found is None:
            found = self._addresses[pointer] = self.driver.CUdeviceptr(pointer)
        return found

    def _check(self, result, what: str) -> None:
        error = result[0] if isinstance(result, tuple) else result
        if error != self.driver.CUresult.CUDA_SUCCESS:
            raise SymmetricMemoryError(f"{what} failed: {error}")

    def write_flag(self, flag: torch.Tensor, value: int, stream=None) -> None:
        driver = self.driver
        result = driver.cuStreamWriteValue32(self._stream(stream), self._address(flag), value,
                                             driver.CUstreamWriteValue_flags.CU_STREAM_WRITE_VALUE_DEFAULT)
        self._check(result, "cuStreamWriteValue32")

    def wait_flag(self, flag: torch.Tensor, timeout: float, what: str, stream=None) -> None:
        # The stream (not the host) waits; a peer that never signals shows up as a
        # stuck stream, which the caller's synchronization or the launcher's timeout reports.
        driver = self.driver
        stream, address = self._stream(stream), self._address(flag)
        self._check(driver.cuStreamWaitValue32(stream, address, 1, driver.CUstreamWaitValue_flags.CU_STREAM_WAIT_VALUE_EQ),
                    "cuStreamWaitValue32")
        self._check(driver.cuStreamWriteValue32(stream, address, 0,
                                                driver.CUstreamWriteValue_flags.CU_STREAM_WRITE_VALUE_DEFAULT),
                    "cuStreamWriteValue32")
