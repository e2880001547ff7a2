"""Probe 2 (not committed as is): zero-SM cross-rank signals and copy-engine schedules.

torchrun --nproc-per-node 2 benchmarks/probe_schedules.py

Signals: cuStreamWriteValue32 into the peer's flag (symmetric memory), cuStreamWaitValue32 on
the local flag, then a local reset. Schedules (hand-written torch), eager and CUDA-graph
replayed, bf16, against ideal = max(fastest comm alone, matmul alone).
"""

from __future__ import annotations

import os
import statistics

import torch
import torch.distributed as dist
import torch.distributed._symmetric_memory as symm_mem
from cuda.bindings import driver as cu

REPEAT = 20


def log(*a):
    if RANK == 0:
        print(*a, flush=True)


def check(result):
    err = result[0] if isinstance(result, tuple) else result
    if err != cu.CUresult.CUDA_SUCCESS:
        raise RuntimeError(f"CUDA driver error {err}")


def timed(fn, repeat=REPEAT, warmup=3):
    for _ in range(warmup):
        fn()
    torch.cuda.synchronize()
    times = []
    for _ in range(repeat):
        dist.barrier()
        torch.cuda.synchronize()
        s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        s.record()
        fn()
        e.record()
        torch.cuda.synchronize()
        times.append(s.elapsed_time(e))
    t = torch.tensor([statistics.median(times)], device="cuda")
    dist.all_reduce(t, op=dist.ReduceOp.MAX)
    return t.item()


def graphed(fn):
    """Capture `fn` (after warm-up) in a CUDA graph; return a replay function."""
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        for _ in range(2):
            fn()
    torch.cuda.current_stream().wait_stream(side)
    torch.cuda.synchronize()
    dist.barrier()
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        fn()
    torch.cuda.synchronize()
    dist.barrier()
    return graph.replay


class Flags:
    """uint32 flags in symmetric memory: [slot, source rank]."""

    def __init__(self, slots, world):
        self.buf = symm_mem.empty(slots * world, dtype=torch.int32, device=DEVICE)
        self.buf.zero_()
        self.hdl = symm_mem.rendezvous(self.buf, dist.group.WORLD.group_name)
        self.world = world
        self.peers = {p: self.hdl.get_buffer(p, (slots * world,), torch.int32).data_ptr()
                      for p in range(world)}
        dist.barrier()

    def addr(self, rank, slot, source):
        return self.peers[rank] + 4 * (slot * self.world + source)

    def signal(self, peer, slot):
        """Tell `peer` (stream-ordered, no SM): slot from me is ready."""
        stream = cu.CUstream(torch.cuda.current_stream().cuda_stream)
        check(cu.cuStreamWriteValue32(stream, cu.CUdeviceptr(self.addr(peer, slot, RANK)), 1,
                                      cu.CUstreamWriteValue_flags.CU_STREAM_WRITE_VALUE_DEFAULT))

    def wait(self, peer, slot):
        """The current stream waits until `peer` signalled `slot`, then resets it."""
        stream = cu.CUstream(torch.cuda.current_stream().cuda_stream)
        addr = cu.CUdeviceptr(self.addr(RANK, slot, peer))
        check(cu.cuStreamWaitValue32(stream, addr, 1, cu.CUstreamWaitValue_flags.CU_STREAM_WAIT_VALUE_EQ))
        check(cu.cuStreamWriteValue32(stream, addr, 0, cu.CUstreamWriteValue_flags.CU_STREAM_WRITE_VALUE_DEFAULT))


def symm(shape, dtype):
    buf = symm_mem.empty(*shape, dtype=dtype, device=DEVICE)
    hdl = symm_mem.rendezvous(buf, dist.group.WORLD.group_name)
    return buf, hdl.get_buffer(1 - RANK, tuple(shape), dtype)


def rel_err(a, b):
    return ((a.float() - b.float()).norm() / b.float().norm()).item()


def pools(n):
    return [torch.cuda.Stream() for _ in range(n)], [torch.cuda.Stream() for _ in range(n)]


# --------------------------------------------------------------------------- #

def signals_latency():
    flags = Flags(4, 2)
    peer = 1 - RANK

    def ping():
        if RANK == 0:
            flags.signal(peer, 0)
            flags.wait(peer, 1)
        else:
            flags.wait(peer, 0)
            flags.signal(peer, 1)

    us = 1e3 * timed(ping)
    import time

    torch.cuda.synchronize()
    t = time.perf_counter()
    for _ in range(200):
        flags.signal(RANK, 3)
        flags.wait(RANK, 3)
    host = (time.perf_counter() - t) / 400 * 1e6
    torch.cuda.synchronize()
    log(f"signal round trip (cuStreamWrite/WaitValue32): {us:.1f} us device; host {host:.1f} us per call")
    g = graphed(ping)
    log(f"  graphed round trip: {1e3 * timed(g):.1f} us")


def ag_matmul(M, K, N, dtype=torch.bfloat16):
    D, peer = 2, 1 - RANK
    results = {}
    b = torch.randn(K, N, device=DEVICE, dtype=dtype) / K ** 0.5
    for S in (2, 4, 8):
        m = M // D // S
        A = torch.randn(S, D, m, K, device=DEVICE, dtype=dtype)  # same seed on both ranks below
        dist.broadcast(A, 0)
        a = A[:, RANK].contiguous()                       # this rank's shard [S, m, K]
        expected = (A.view(-1, K) @ b).view(S, D, m, N)
        g, pg = symm((S, D, m, K), dtype)
        out = torch.empty(S, D, m, N, device=DEVICE, dtype=dtype)
        flags = Flags(2 + S, D)
        work, comm = pools(4)

        def loop(split_own):
            def run():
                user = torch.cuda.current_stream()
                flags.wait(peer, 0)            # acquire: the peer finished with its g
                for i in range(S):
                    w, c = work[i % 4], comm[i % 4]
                    w.wait_stream(user)
                    c.wait_stream(w)
                    with torch.cuda.stream(c):
                        pg[i, RANK].copy_(a[i])
                        flags.signal(peer, 2 + i)
                        if not split_own:
                            g[i, RANK].copy_(a[i])
                    with torch.cuda.stream(w):
                        if split_own:
                            torch.matmul(a[i], b, out=out[i, RANK])
                            flags.wait(peer, 2 + i)
                            torch.matmul(g[i, peer], b, out=out[i, peer])
                        else:
                            w.wait_stream(c)
                            flags.wait(peer, 2 + i)
                            torch.matmul(g[i].view(D * m, K), b, out=out[i].view(D * m, N))
                    user.wait_stream(w)
                    user.wait_stream(c)
                flags.signal(peer, 0)          # release: the peer may write into my g
            return run

        if S == 2:
            results["comm_ce"] = timed(lambda: pg[:, RANK].copy_(a))
            results["matmul"] = timed(lambda: torch.matmul(A.view(-1, K), b, out=out.view(-1, N)))
        flags.signal(peer, 0)  # initial state: released
        torch.cuda.synchronize()
        dist.barrier()
        for split in (False, True):
            name = f"loop_S{S}" + ("_ownrows" if split else "")
            fn = loop(split)
            out.fill_(float("nan"))
            fn()
            torch.cuda.synchronize()
            err = rel_err(out, expected)
            if not err < 2e-2:
                results[name] = f"WRONG {err:.2e}"
                continue
            results[name] = timed(fn)
            results[name + "_graph"] = timed(graphed(fn))
        del g, pg, flags
    return results


def matmul_rs(M, K, N, allreduce, dtype=torch.bfloat16):
    D, peer = 2, 1 - RANK
    results = {}
    for S in (2, 4, 8):
        m = M // S // D
        A = torch.randn(S, D, m, K, device=DEVICE, dtype=dtype)
        B = torch.randn(K, N, device=DEVICE, dtype=dtype) / K ** 0.5
        dist.broadcast(A, 0)
        dist.broadcast(B, 0)
        kk = K // D
        a = A[..., RANK * kk:(RANK + 1) * kk].contiguous()   # [S, D, m, K/D]
        b = B[RANK * kk:(RANK + 1) * kk].contiguous()
        full = (A.view(-1, K) @ B).view(S, D, m, N)
        expected = full if allreduce else full[:, RANK]
        partial = torch.empty(S, D, m, N, device=DEVICE, dtype=dtype)
        out = torch.empty_like(expected)
        recv_shape = (S, D, m, N) if allreduce else (S, m, N)
        r, pr = symm(recv_shape, dtype)
        flags = Flags(2 + S, D)
        work, comm = pools(4)

        def loop(peer_first):
            def run():
                user = torch.cuda.current_stream()
                flags.wait(peer, 0)
                for i in range(S):
                    w, c = work[i % 4], comm[i % 4]
                    w.wait_stream(user)
                    with torch.cuda.stream(w):
                        if peer_first and not allreduce:
                            torch.matmul(a[i, peer], b, out=partial[i, peer])
                        else:
                            torch.matmul(a[i].view(D * m, kk), b, out=partial[i].view(D * m, N))
                    c.wait_stream(w)
                    with torch.cuda.stream(c):
                        pr[i].copy_(partial[i] if allreduce else partial[i, peer])
                        flags.signal(peer, 2 + i)
                    with torch.cuda.stream(w):
                        if peer_first and not allreduce:
                            torch.matmul(a[i, RANK], b, out=partial[i, RANK])
                    with torch.cuda.stream(c):
                        c.wait_stream(w)
                        flags.wait(peer, 2 + i)
                        torch.add(partial[i] if allreduce else partial[i, RANK], r[i], out=out[i])
                    user.wait_stream(c)
                flags.signal(peer, 0)
            return run

        if S == 2:
            results["comm_ce"] = timed(lambda: pr.copy_(partial if allreduce else partial[:, peer]))
            results["matmul"] = timed(lambda: torch.matmul(a.view(-1, kk), b, out=partial.view(-1, N)))
        flags.signal(peer, 0)
        torch.cuda.synchronize()
        dist.barrier()
        for pf in ((False,) if allreduce else (False, True)):
            name = f"loop_S{S}" + ("_peerfirst" if pf else "")
            fn = loop(pf)
            out.fill_(float("nan"))
            fn()
            torch.cuda.synchronize()
            err = rel_err(out, expected)
            if not err < 2e-2:
                results[name] = f"WRONG {err:.2e}"
                continue
            results[name] = timed(fn)
            results[name + "_graph"] = timed(graphed(fn))
        del r, pr, flags
    return results


def report(op, shape, res):
    ideal = max(res["comm_ce"], res["matmul"])
    log(f"{op} {shape}: comm_ce {res['comm_ce']:.3f} matmul {res['matmul']:.3f} ideal {ideal:.3f}")
    log("   " + "  ".join(f"{k} {v if isinstance(v, str) else f'{v / ideal:.2f}x'}"
                          for k, v in res.items() if k not in ("comm_ce", "matmul")))


def main():
    global RANK, DEVICE
    RANK = int(os.environ["RANK"])
    DEVICE = torch.device("cuda", int(os.environ["LOCAL_RANK"]))
    torch.cuda.set_device(DEVICE)
    dist.init_process_group("nccl", device_id=DEVICE)
    torch.manual_seed(0)
    try:
        signals_latency()
    except Exception as error:
        log("signals FAILED", type(error).__name__, error)
    for M, K, N in ((16384, 8192, 4096), (32768, 4096, 2048), (16384, 8192, 1024)):
        for op in ("AG+matmul", "matmul+RS", "matmul+AR"):
            try:
                res = ag_matmul(M, K, N) if op == "AG+matmul" else matmul_rs(M, K, N, op == "matmul+AR")
                report(op, f"{M}x{K}x{N}", res)
            except Exception as error:
                log(op, "FAILED", type(error).__name__, error)
            torch.cuda.empty_cache()
    dist.barrier()
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
