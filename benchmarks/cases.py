"""The three overlap cases and every way the benchmarks compute them.

Global operands: A is M×K, B is K×N, C = A @ B, over D ranks.
- AG+matmul: A sharded on M, B replicated; every rank computes all of C.
- matmul+RS: A sharded on K (columns), B on K (rows); each rank's partial M×N product is
  reduce-scattered on M.
- matmul+AR: sharded as matmul+RS; the partial products are all-reduced: every rank gets C.

Layouts. Sharding M over S stream chunks means what hostir's schedules mean: A viewed as
[S, D, M/(S·D), K], rank r holding [:, r], so that chunk i of every rank is gathered together;
matmul+RS's output is split the same way. With S = 1 this is plain block sharding, which the
naive schedules and torch's fused ops use.

Each case builds, on this rank, `measure.Variant`s:
  naive                collective then matmul (matmul then collective), on one stream
  comm_nccl            the NCCL collective alone, on the same bytes
  comm_ce              the copy-engine traffic alone: each peer's bytes copied into its
                       symmetric-memory buffer, the fewest bytes the collective must move
  matmul               the per-rank GEMM alone
  handwritten(S)       the schedule hostir emits, written directly in torch
  handwritten_ce(S)    matmul+AR only: the copy-engine schedule issue 27 asks hostir to emit
  torch_fused          torch's symmetric-memory fused op (matmul+AR has none)
and `hostir(case, S, pass_options)` builds the fusion with the Python frontend, lowers it and
runs it with `runtime.Evaluator` on this rank.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from functools import cached_property

import torch
import torch.distributed as dist
from measure import Variant

from hostir.passes import PIPELINES
from hostir.passes.pipeline import build_passes, run_passes
from hostir.runtime import Evaluator
from hostir.runtime.copy_engine import push_order
from hostir.runtime.layouts import logical_shape
from hostir.runtime.symmetric_memory import Flags, SymmetricHeap
from hostir_dialect import DeviceMesh, FusionDefinition, ParallelType
from hostir_dialect.context import make_context

# The entry points hostir's runtime posts through (newer torch renamed them).
all_gather = getattr(dist, "all_gather_single", None) or dist.all_gather_into_tensor
reduce_scatter = getattr(dist, "reduce_scatter_single", None) or dist.reduce_scatter_tensor


@dataclass(frozen=True)
class Problem:
    """One case's sizes, element type and this rank's place."""

    m: int
    k: int
    n: int
    dtype: torch.dtype
    device: torch.device
    rank: int
    world: int

    @property
    def peers(self) -> list[int]:
        """The other ranks in the order a rank pushes to them, as hostir's copy engines do."""
        return list(push_order(self.rank, self.world))

    def empty(self, *shape: int) -> torch.Tensor:
        return torch.empty(shape, dtype=self.dtype, device=self.device)


def unsupported(m: int, k: int, world: int, chunk_counts: list[int]) -> str | None:
    """Why M×K×N cannot be split over `world` ranks and each of `chunk_counts`, if it cannot.
    A chunk of one row would be a broadcast axis for the frontend, so chunks need two."""
    if world < 2:
        return f"the cases shard over at least 2 ranks, not {world}"
    for chunks in chunk_counts:
        if m % (2 * chunks * world):
            return f"M = {m} is not a multiple of 2 x {chunks} chunks x {world} ranks"
    if k % world:
        return f"K = {k} is not a multiple of {world} ranks"
    return None


class Operands:
    """Fresh random global A and B, the same on every rank, and float64 references."""

    def __init__(self, problem: Problem, seed: int):
        self.problem = problem
        generator = torch.Generator(device=problem.device).manual_seed(seed)

        def draw(rows: int, cols: int, scale: float = 1.0) -> torch.Tensor:
            values = torch.randn(rows, cols, generator=generator, device=problem.device)
            return (values * scale).to(problem.dtype)

        self.a = draw(problem.m, problem.k)
        self.b = draw(problem.k, problem.n, problem.k**-0.5)  # keeps C's entries near 1

    @cached_property
    def c(self) -> torch.Tensor:
        return self.a.double() @ self.b.double()

    def partial(self, rank: int) -> torch.Tensor:
        """Rank `rank`'s partial product when A and B are sharded on K."""
        width = self.problem.k // self.problem.world
        cols = slice(rank * width, (rank + 1) * width)
        return self.a[:, cols].double() @ self.b[cols].double()


# --------------------------------------------------------------------------- #
# Streams and copies, as hostir's runtime issues them
# --------------------------------------------------------------------------- #


class _Synchronous:
    """A CPU "stream": CPU work runs in program order, so there is nothing to wait for."""

    def wait_stream(self, other: object) -> None:
        pass


@dataclass(frozen=True)
class Streams:
    current: Callable[[], object]
    set_current: Callable[[object], None]
    workers: list


def worker_streams(device: torch.device, count: int) -> Streams:
    if device.type == "cuda":
        return Streams(torch.cuda.current_stream, torch.cuda.set_stream,
                       [torch.cuda.Stream(device) for _ in range(count)])
    cpu = _Synchronous()
    return Streams(lambda: cpu, lambda stream: None, [cpu] * count)


def stream_pipeline(streams: Streams, chunk: Callable[[int], None]) -> Callable[[], None]:
    """hostir's stream loops, one chunk per worker stream: every worker first waits for the
    user's stream (a loop of its own, so that the main loop's iterations can overlap); then
    iteration i runs `chunk(i)` on worker i and makes the user's stream wait for it."""
    current, set_current, workers = streams.current, streams.set_current, streams.workers

    def run() -> None:
        user = current()
        for worker in workers:
            set_current(worker)
            worker.wait_stream(user)
        for i, worker in enumerate(workers):
            set_current(worker)
            chunk(i)
            set_current(user)
            user.wait_stream(worker)

    return run


def symmetric_buffer(shape: tuple[int, ...], problem: Problem):
    """A buffer in symmetric memory (CUDA only) and the handle that maps the peers' buffers."""
    from torch.distributed import _symmetric_memory as symm_mem

    buffer = symm_mem.empty(*shape, dtype=problem.dtype, device=problem.device)
    return buffer, symm_mem.rendezvous(buffer, dist.group.WORLD.group_name)


def copies(pushes: list[tuple[torch.Tensor, torch.Tensor]]) -> Callable[[], None]:
    """Copy each (target, source) pair; a target in a peer's buffer makes it a copy-engine push."""

    def run() -> None:
        for target, source in pushes:
            target.copy_(source)

    return run


# --------------------------------------------------------------------------- #
# The cases
# --------------------------------------------------------------------------- #


class Case:
    """A case on this rank: its layouts and the variants that compute it."""

    name: str
    collective: str
    """The hir op of its communication (its copy-engine algorithm says what it sends)."""
    torch_fused: Callable[[], Variant] | None = None
    """torch's fused op for the case, where torch has one."""
    handwritten_ce: Callable[[int], Variant] | None = None
    """The copy-engine schedule hostir should emit, written by hand, where one is (GPUs, 2 ranks)."""

    def __init__(self, problem: Problem):
        self.p = problem

    def communicated_bytes(self) -> int:
        """What each rank contributes to the collective."""
        raise NotImplementedError

    def flops(self) -> int:
        """The multiply-adds (x 2) one rank's GEMM does."""
        raise NotImplementedError

    def a_shard(self, a: torch.Tensor, chunks: int = 1) -> torch.Tensor:
        """This rank's part of the global A, laid out for `chunks` stream chunks (a matrix)."""
        raise NotImplementedError

    def b_shard(self, b: torch.Tensor) -> torch.Tensor:
        raise NotImplementedError

    def c_shard(self, c: torch.Tensor, chunks: int = 1) -> torch.Tensor:
        """What this rank's output holds of the global C, for `chunks` stream chunks."""
        raise NotImplementedError

    def fusion(self, chunks: int) -> FusionDefinition:
        """The case as nvFuser schedules it, over `chunks` stream chunks, on the whole world."""
        raise NotImplementedError

    def operands(self, chunks: int) -> tuple[torch.Tensor, torch.Tensor, Callable[[Operands], None]]:
        """This rank's A and B buffers for `chunks` chunks, and the function that fills them."""
        meta = torch.device("meta")
        a = self.p.empty(*self.a_shard(torch.empty(self.p.m, self.p.k, device=meta), chunks).shape)
        b = self.p.empty(*self.b_shard(torch.empty(self.p.k, self.p.n, device=meta)).shape)

        def load(operands: Operands) -> None:
            a.copy_(self.a_shard(operands.a, chunks))
            b.copy_(self.b_shard(operands.b))

        return a, b, load

    def _mesh(self, *tensors) -> None:
        mesh = DeviceMesh(list(range(self.p.world)))
        for tensor in tensors:
            tensor.set_device_mesh(mesh)


class AgMatmul(Case):
    name = "AG+matmul"
    collective = "hir.allgather"

    def communicated_bytes(self) -> int:
        return self.p.m // self.p.world * self.p.k * self.p.dtype.itemsize

    def flops(self) -> int:
        return 2 * self.p.m * self.p.k * self.p.n

    def a_shard(self, a, chunks=1):
        p = self.p
        return a.view(chunks, p.world, -1, p.k)[:, p.rank].reshape(-1, p.k)

    def b_shard(self, b):
        return b

    def c_shard(self, c, chunks=1):
        return c

    def naive(self) -> Variant:
        a, b, load = self.operands(1)
        gathered, c = self.p.empty(self.p.m, self.p.k), self.p.empty(self.p.m, self.p.n)

        def run() -> None:
            all_gather(gathered, a)
            torch.matmul(gathered, b, out=c)

        return Variant(run, lambda: c, load, lambda ops: ops.c, (c,))

    def comm_nccl(self) -> Variant:
        a, _, load = self.operands(1)
        gathered = self.p.empty(self.p.m, self.p.k)
        return Variant(lambda: all_gather(gathered, a), lambda: gathered, load, lambda ops: ops.a, (gathered,))

    def comm_ce(self) -> Variant:
        p = self.p
        a, _, load = self.operands(1)
        gathered, handle = symmetric_buffer((p.m, p.k), p)
        rows = p.m // p.world

        def block(t: torch.Tensor, rank: int) -> torch.Tensor:
            return t[rank * rows:(rank + 1) * rows]

        pushes = [(block(handle.get_buffer(q, (p.m, p.k), p.dtype), p.rank), a) for q in p.peers]
        return Variant(copies(pushes), lambda: torch.cat([block(gathered, q) for q in p.peers]), load,
                       lambda ops: torch.cat([block(ops.a, q) for q in p.peers]), (gathered,))

    def matmul(self) -> Variant:
        gathered, b, c = self.p.empty(self.p.m, self.p.k), self.p.empty(self.p.k, self.p.n), self.p.empty(self.p.m, self.p.n)

        def load(ops: Operands) -> None:
            gathered.copy_(ops.a)
            b.copy_(ops.b)

        return Variant(lambda: torch.matmul(gathered, b, out=c), lambda: c, load, lambda ops: ops.c, (c,))

    def handwritten(self, chunks: int) -> Variant:
        p = self.p
        a, b, load = self.operands(chunks)
        gathered, c = p.empty(chunks, p.m // chunks, p.k), p.empty(p.m, p.n)
        a_chunks, c_chunks = a.view(chunks, -1, p.k), c.view(chunks, -1, p.n)

        def chunk(i: int) -> None:
            all_gather(gathered[i], a_chunks[i], async_op=True).wait()
            torch.matmul(gathered[i], b, out=c_chunks[i])

        run = stream_pipeline(worker_streams(p.device, chunks), chunk)
        return Variant(run, lambda: c, load, lambda ops: ops.c, (c,))

    def torch_fused(self) -> Variant:
        a, b, load = self.operands(1)
        outputs: list[torch.Tensor] = []

        def run() -> None:
            _, outputs[:] = torch.ops.symm_mem.fused_all_gather_matmul(
                a, [b], gather_dim=0, group_name=dist.group.WORLD.group_name)

        return Variant(run, lambda: outputs[0], load, lambda ops: ops.c)

    def fusion(self, chunks: int) -> FusionDefinition:
        p = self.p
        with FusionDefinition("ag_matmul") as fd:
            a = fd.define_tensor([chunks, p.world, p.m // (chunks * p.world), p.k], dtype=p.dtype)
            b = fd.define_tensor([p.k, p.n], dtype=p.dtype)
            c = fd.ops.matmul(a, b)
            fd.add_output(c)
        self._mesh(a, b, c)
        a.axis(1).parallelize(ParallelType.DIDx)
        c.axis(0).parallelize(ParallelType.Stream)
        return fd


class _ShardedOnK(Case):
    """matmul+RS and matmul+AR: A's columns and B's rows are sharded."""

    fusion_name: str
    scatters: bool
    """matmul+RS: the reduction scatters C's row blocks; matmul+AR: every rank gets C."""

    def communicated_bytes(self) -> int:
        return self.p.m * self.p.n * self.p.dtype.itemsize  # the partial product

    def flops(self) -> int:
        return 2 * self.p.m * (self.p.k // self.p.world) * self.p.n

    def fusion(self, chunks: int) -> FusionDefinition:
        p = self.p
        with FusionDefinition(self.fusion_name) as fd:
            # [S, D (K shard), D (M block), M/(S·D), K/D]: chunk i of M splits into D row blocks
            a = fd.define_tensor([chunks, p.world, p.world, p.m // (chunks * p.world), p.k // p.world], dtype=p.dtype)
            b = fd.define_tensor([p.world, p.k // p.world, p.n], dtype=p.dtype)
            b_batched = fd.ops.broadcast(b, [True, False, True, False, False])
            partial = fd.ops.matmul(a, b_batched)
            c = fd.ops.sum(partial, dims=[1])
            fd.add_output(c)
        self._mesh(a, b, b_batched, partial, c)
        for t in (a, b_batched, partial):
            t.axis(1).parallelize(ParallelType.DIDx)
        b.axis(0).parallelize(ParallelType.DIDx)
        if self.scatters:
            c.axis(2).parallelize(ParallelType.DIDx)  # the reduction scatters the row blocks
        partial.axis(0).parallelize(ParallelType.Stream)
        c.axis(0).parallelize(ParallelType.Stream)
        return fd

    def a_shard(self, a, chunks=1):
        p = self.p
        return a.view(p.m, p.world, p.k // p.world)[:, p.rank]

    def b_shard(self, b):
        p = self.p
        return b.view(p.world, p.k // p.world, p.n)[p.rank]

    def matmul(self) -> Variant:
        a, b, load = self.operands(1)
        partial = self.p.empty(self.p.m, self.p.n)
        return Variant(lambda: torch.matmul(a, b, out=partial), lambda: partial, load,
                       lambda ops: ops.partial(self.p.rank), (partial,))

    def _partial_product(self) -> tuple[torch.Tensor, Callable[[Operands], None]]:
        """A buffer holding this rank's partial product: the input of the communication alone."""
        partial = self.p.empty(self.p.m, self.p.n)
        return partial, lambda ops: partial.copy_(ops.partial(self.p.rank))

    def _blocks(self, t: torch.Tensor) -> torch.Tensor:
        """An M×N tensor as D row blocks."""
        return t.view(self.p.world, self.p.m // self.p.world, self.p.n)

    def _scatter_pushes(self, partial: torch.Tensor):
        """Copy-engine reduce-scatter traffic: block q of my partial into slot `rank` of peer
        q's buffer. Returns my buffer (where the peers' blocks for me land) and the pushes."""
        p = self.p
        received, handle = symmetric_buffer(tuple(self._blocks(partial).shape), p)
        pushes = [(self._blocks(handle.get_buffer(q, tuple(received.shape), p.dtype))[p.rank], self._blocks(partial)[q])
                  for q in p.peers]
        return received, pushes

    def _received_from_peers(self, buffer: torch.Tensor) -> torch.Tensor:
        return torch.cat([buffer[q] for q in self.p.peers])


class MatmulReduceScatter(_ShardedOnK):
    name = "matmul+RS"
    collective = "hir.reduce_scatter"
    fusion_name = "matmul_rs"
    scatters = True

    def c_shard(self, c, chunks=1):
        p = self.p
        return c.view(chunks, p.world, -1, p.n)[:, p.rank].reshape(-1, p.n)

    def naive(self) -> Variant:
        a, b, load = self.operands(1)
        partial, out = self.p.empty(self.p.m, self.p.n), self.p.empty(self.p.m // self.p.world, self.p.n)

        def run() -> None:
            torch.matmul(a, b, out=partial)
            reduce_scatter(out, partial)

        return Variant(run, lambda: out, load, lambda ops: self.c_shard(ops.c), (out,))

    def comm_nccl(self) -> Variant:
        partial, load = self._partial_product()
        out = self.p.empty(self.p.m // self.p.world, self.p.n)
        return Variant(lambda: reduce_scatter(out, partial), lambda: out, load,
                       lambda ops: self.c_shard(ops.c), (out,))

    def comm_ce(self) -> Variant:
        partial, load = self._partial_product()
        received, pushes = self._scatter_pushes(partial)
        rank = self.p.rank

        def expected(ops: Operands) -> torch.Tensor:
            return torch.cat([self._blocks(ops.partial(q))[rank] for q in self.p.peers])

        return Variant(copies(pushes), lambda: self._received_from_peers(received), load, expected, (received,))

    def handwritten(self, chunks: int) -> Variant:
        p = self.p
        a, b, load = self.operands(chunks)
        partial, out = p.empty(chunks, p.m // chunks, p.n), p.empty(chunks, p.m // (chunks * p.world), p.n)
        a_chunks = a.view(chunks, -1, a.shape[-1])

        def chunk(i: int) -> None:
            torch.matmul(a_chunks[i], b, out=partial[i])
            reduce_scatter(out[i], partial[i], async_op=True).wait()

        run = stream_pipeline(worker_streams(p.device, chunks), chunk)
        return Variant(run, lambda: out, load, lambda ops: self.c_shard(ops.c, chunks), (out,))

    def torch_fused(self) -> Variant:
        a, b, load = self.operands(1)
        outputs: list[torch.Tensor] = []

        def run() -> None:
            outputs[:] = [torch.ops.symm_mem.fused_matmul_reduce_scatter(
                a, b, "sum", scatter_dim=0, group_name=dist.group.WORLD.group_name)]

        return Variant(run, lambda: outputs[0], load, lambda ops: self.c_shard(ops.c))

class MatmulAllReduce(_ShardedOnK):
    name = "matmul+AR"
    collective = "hir.allreduce"
    fusion_name = "matmul_ar"
    scatters = False

    def c_shard(self, c, chunks=1):
        return c

    def naive(self) -> Variant:
        a, b, load = self.operands(1)
        c = self.p.empty(self.p.m, self.p.n)

        def run() -> None:
            torch.matmul(a, b, out=c)
            dist.all_reduce(c)

        return Variant(run, lambda: c, load, lambda ops: ops.c, (c,))

    def comm_nccl(self) -> Variant:
        # In place: the sums grow from run to run, which costs NCCL nothing.
        partial, load = self._partial_product()
        return Variant(lambda: dist.all_reduce(partial), lambda: partial, load, lambda ops: ops.c)

    def comm_ce(self) -> Variant:
        """Reduce-scatter traffic, then all-gather traffic (my block of the partial stands in
        for the reduced block: same bytes)."""
        p = self.p
        partial, load = self._partial_product()
        received, pushes = self._scatter_pushes(partial)
        gathered, handle = symmetric_buffer(tuple(received.shape), p)
        pushes += [(handle.get_buffer(q, tuple(gathered.shape), p.dtype)[p.rank], self._blocks(partial)[p.rank])
                   for q in p.peers]

        def result() -> torch.Tensor:
            return torch.cat([self._received_from_peers(received), self._received_from_peers(gathered)])

        def expected(ops: Operands) -> torch.Tensor:
            peer_blocks = {q: self._blocks(ops.partial(q)) for q in p.peers}
            return torch.cat([peer_blocks[q][p.rank] for q in p.peers] + [peer_blocks[q][q] for q in p.peers])

        return Variant(copies(pushes), result, load, expected, (received, gathered))

    def handwritten(self, chunks: int) -> Variant:
        p = self.p
        a, b, load = self.operands(chunks)
        partial, out = p.empty(chunks, p.m // chunks, p.n), p.empty(chunks, p.m // chunks, p.n)
        a_chunks = a.view(chunks, -1, a.shape[-1])

        def chunk(i: int) -> None:
            torch.matmul(a_chunks[i], b, out=partial[i])
            out[i].copy_(partial[i])  # hostir's allreduce reduces into its output buffer
            dist.all_reduce(out[i], async_op=True).wait()

        run = stream_pipeline(worker_streams(p.device, chunks), chunk)
        return Variant(run, lambda: out, load, lambda ops: ops.c, (out,))

    def handwritten_ce(self, chunks: int) -> Variant:
        """The schedule issue 27 asks of hostir, written by hand on 2 GPUs: nothing but the
        GEMMs on the SMs. Per chunk, the peer's half of the partial product first, pushed by
        the copy engines straight into the peer's output; then the own half computed onto
        what the peer pushed there (`addmm_`: the reduction in the GEMM's epilogue) and
        pushed into the peer's output. Compute order p(0), p(1), m(0), p(2), m(1), ...: each
        push has a GEMM's time to land before the GEMM that reads it. The output lives in
        symmetric memory and the next run overwrites it (hostir's default mode hands out
        buffers its next run does not touch). Replayed from a CUDA graph, as hostir's
        default; the flags are hostir's (cuStreamWriteValue/WaitValue). CUDA, 2 ranks."""
        p = self.p
        a, b, load = self.operands(1)
        schedule = _FusedAllreduce(p, a.view(chunks, 2, -1, a.shape[-1]), b)
        return Variant(_graphed(schedule.run), lambda: schedule.out.local.view(p.m, p.n), load, lambda ops: ops.c,
                       (schedule.out.local,))


class _FusedAllreduce:
    """`MatmulAllReduce.handwritten_ce`'s buffers and one run of its schedule."""

    def __init__(self, p: Problem, rows: torch.Tensor, b: torch.Tensor):
        chunks, half = rows.shape[0], rows.shape[2]
        heap = _symmetric_heap(p)
        self.rows, self.b, self.me, self.peer, self.chunks = rows, b, p.rank, 1 - p.rank, chunks
        self.out = heap.allocate((0, 1), (chunks, 2, half, p.n), p.dtype)
        self.flags = Flags(heap, (0, 1), 2 * chunks)  # per chunk: the peer's partial in, its sum in
        self.partial = p.empty(chunks, half, p.n)
        self.comm = torch.cuda.Stream(p.device, priority=-1)

    def run(self) -> None:
        compute = torch.cuda.current_stream()
        for step in range(self.chunks + 1):
            if step < self.chunks:
                self._peer_part(step, compute)
            if step:
                self._own_part(step - 1, compute)
        for i in range(self.chunks):
            self.flags.wait(self.peer, 2 * i + 1, compute)
        compute.wait_stream(self.comm)

    def _peer_part(self, i: int, compute) -> None:
        torch.matmul(self.rows[i, self.peer], self.b, out=self.partial[i])
        self._push(self.partial[i], i, self.peer, 2 * i, compute)

    def _own_part(self, i: int, compute) -> None:
        self.flags.wait(self.peer, 2 * i, compute)
        mine = self.out.local[i, self.me]
        mine.addmm_(self.rows[i, self.me], self.b)
        self._push(mine, i, self.me, 2 * i + 1, compute)

    def _push(self, source: torch.Tensor, i: int, half: int, slot: int, compute) -> None:
        """On the communication stream, after `compute`'s work so far: `source` into half
        `half` of chunk `i` of the peer's output, then flag `slot`."""
        self.comm.wait_stream(compute)
        with torch.cuda.stream(self.comm):
            self.out.peer(self.peer)[i, half].copy_(source)
            self.flags.signal(self.peer, slot, self.comm)


_HEAPS: dict[torch.device, SymmetricHeap] = {}


def _symmetric_heap(p: Problem) -> SymmetricHeap:
    """hostir's symmetric heap of this process (one per device)."""
    if p.device not in _HEAPS:
        _HEAPS[p.device] = SymmetricHeap(p.rank, p.device, lambda team: dist.group.WORLD)
    return _HEAPS[p.device]


def _graphed(run: Callable[[], None]) -> Callable[[], None]:
    """`run` captured in a CUDA graph after one eager run (on every rank at once): its replay."""
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        run()
    torch.cuda.current_stream().wait_stream(side)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        run()
    return graph.replay


class StreamMatmul(Case):
    """A matmul pipelined over stream chunks on one device, communicating nothing: what
    the host path costs where there is no second GPU (gpu_host_overhead.py on one rank)."""

    name = "matmul"

    def a_shard(self, a, chunks=1):
        return a

    def b_shard(self, b):
        return b

    def c_shard(self, c, chunks=1):
        return c

    def handwritten(self, chunks: int) -> Variant:
        p = self.p
        a, b, load = self.operands(chunks)
        c = p.empty(p.m, p.n)
        a_chunks, c_chunks = a.view(chunks, -1, p.k), c.view(chunks, -1, p.n)

        def chunk(i: int) -> None:
            torch.matmul(a_chunks[i], b, out=c_chunks[i])

        run = stream_pipeline(worker_streams(p.device, chunks), chunk)
        return Variant(run, lambda: c, load, lambda ops: ops.c, (c,))

    def fusion(self, chunks: int) -> FusionDefinition:
        p = self.p
        with FusionDefinition("stream_matmul") as fd:
            a = fd.define_tensor([chunks, p.m // chunks, p.k], dtype=p.dtype)
            b = fd.define_tensor([p.k, p.n], dtype=p.dtype)
            c = fd.ops.matmul(a, b)
            fd.add_output(c)
        c.axis(0).parallelize(ParallelType.Stream)
        return fd


CASES: dict[str, type[Case]] = {c.name: c for c in (AgMatmul, MatmulReduceScatter, MatmulAllReduce)}


# --------------------------------------------------------------------------- #
# hostir
# --------------------------------------------------------------------------- #


def lowering_pipeline(pass_options: Mapping[str, Mapping[str, object]] | None) -> str:
    """hostir-lower's passes, with options for some: {"pass-name": {"option": value}};
    None: `hostir-lower` itself, with its default options."""
    if pass_options is None:
        return "hostir-lower"
    passes = PIPELINES["hostir-lower"]
    unknown = set(pass_options) - set(passes)
    if unknown:
        raise ValueError(f"{sorted(unknown)} are not passes of hostir-lower ({', '.join(passes)})")
    return ",".join(name + _options_text(pass_options.get(name, {})) for name in passes)


def _options_text(options: Mapping[str, object]) -> str:
    if not options:
        return ""
    return "{" + " ".join(f"{key}={str(value).lower() if isinstance(value, bool) else value}"
                          for key, value in options.items()) + "}"


def hostir(case: Case, chunks: int, pass_options: Mapping[str, Mapping[str, object]] | None,
           cuda_graph: bool | None = False, copy_engine_streams: int = 1) -> Variant:
    """The case's fusion over `chunks` stream chunks, lowered, run with numberOfStreams = chunks
    (replayed from a CUDA graph with `cuda_graph`, inputs bound once) and `copy_engine_streams`
    communication streams per copy-engine phase. `pass_options` and `cuda_graph` None:
    everything else as a user who sets nothing gets it (`hostir-lower`'s and the
    Evaluator's defaults, inputs passed as tensors every run)."""
    p = case.p
    module = case.fusion(chunks).to_module()
    run_passes(make_context(), module, build_passes(lowering_pipeline(pass_options)))
    evaluator = Evaluator(module, rank=p.rank, world_size=p.world, number_of_streams=chunks, device=p.device,
                          cuda_graph=cuda_graph, copy_engine_streams=copy_engine_streams)
    a_type, b_type = (arg.type for arg in evaluator.function.args)
    inputs: list[torch.Tensor] = []
    outputs: list[torch.Tensor] = []
    bind = evaluator.bind_inputs if cuda_graph is not None else list

    def load(ops: Operands) -> None:
        # Bound once per load, as a CUDA-graph user binds static inputs: a replay then
        # copies nothing in (eagerly, binding hands back the tensors themselves).
        inputs[:] = bind([case.a_shard(ops.a, chunks).reshape(logical_shape(a_type, p.rank)).contiguous(),
                          case.b_shard(ops.b).reshape(logical_shape(b_type, p.rank)).contiguous()])

    def run() -> None:
        outputs[:] = evaluator.run(inputs)

    return Variant(run, lambda: outputs[0], load, lambda ops: case.c_shard(ops.c, chunks))
