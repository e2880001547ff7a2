"""Probe (not a benchmark of hostir): what the GPU machine gives a copy-engine transport.

torchrun --nproc-per-node 2 benchmarks/probe_copy_engine.py [--quick]

Prints, rank 0: the symmetric-memory API of this torch, copy-engine and NCCL bandwidths,
GEMM rates, GEMM slowdown while copies run, signal latencies, and hand-written torch
prototypes of copy-engine AG+matmul / matmul+RS / matmul+AR pipelines against NCCL and
torch's fused ops. Every prototype is checked against the NCCL result before it is timed.
"""

from __future__ import annotations

import json
import os
import statistics
import sys
import time

import torch
import torch.distributed as dist

QUICK = "--quick" in sys.argv
REPEAT = 10 if QUICK else 20


def log(*args):
    if RANK == 0:
        print(*args, flush=True)


def timed(fn, repeat=REPEAT, warmup=3):
    """Median ms over `repeat` runs (CUDA events, barrier between runs), max over ranks."""
    for _ in range(warmup):
        fn()
    torch.cuda.synchronize()
    times = []
    for _ in range(repeat):
        dist.barrier()
        torch.cuda.synchronize()
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        fn()
        end.record()
        torch.cuda.synchronize()
        times.append(start.elapsed_time(end))
    t = torch.tensor([statistics.median(times)], device="cuda")
    dist.all_reduce(t, op=dist.ReduceOp.MAX)
    return t.item()


def host_us(fn, n=200):
    """Host microseconds per call (device work drained after)."""
    fn()
    torch.cuda.synchronize()
    start = time.perf_counter()
    for _ in range(n):
        fn()
    elapsed = time.perf_counter() - start
    torch.cuda.synchronize()
    return 1e6 * elapsed / n


def rel_err(a, b):
    return ((a.float() - b.float()).norm() / b.float().norm()).item()


RESULTS: dict = {}


def section(name):
    def wrap(fn):
        def run(*a, **k):
            log(f"\n== {name} ==")
            try:
                fn(*a, **k)
            except Exception as error:  # the probe keeps going: each section reports its own failure
                log(f"   FAILED: {type(error).__name__}: {error}")
        return run
    return wrap


@section("environment")
def environment():
    import torch.distributed._symmetric_memory as symm_mem
    from torch._C._distributed_c10d import _SymmetricMemory

    RESULTS["torch"] = torch.__version__
    RESULTS["nccl"] = ".".join(map(str, torch.cuda.nccl.version()))
    log("torch", torch.__version__, "nccl", RESULTS["nccl"], "devices", torch.cuda.device_count(),
        torch.cuda.get_device_name(), "SMs", torch.cuda.get_device_properties(0).multi_processor_count)
    log("symm_mem module:", [n for n in dir(symm_mem) if not n.startswith("__") and "fused" in n or n in
                             ("empty", "rendezvous", "put_signal", "wait_signal", "get_backend", "set_backend")])
    log("_SymmetricMemory:", [n for n in dir(_SymmetricMemory) if not n.startswith("_")])
    try:
        log("symm backend:", symm_mem.get_backend(torch.device("cuda", RANK)))
    except Exception as error:
        log("get_backend failed:", error)
    try:
        from cuda.bindings import driver

        log("cuda.bindings driver: cuStreamWaitValue32 =", hasattr(driver, "cuStreamWaitValue32"))
    except Exception as error:
        log("cuda.bindings:", type(error).__name__, error)
    for var in ("NCCL_NVLS_ENABLE", "TORCH_SYMM_MEM_DISABLE_MULTICAST", "NVSHMEM_DISABLE_NVLS"):
        log(var, os.environ.get(var))


def symm_buffer(shape, dtype):
    import torch.distributed._symmetric_memory as symm_mem

    buf = symm_mem.empty(*shape, dtype=dtype, device=DEVICE)
    hdl = symm_mem.rendezvous(buf, dist.group.WORLD.group_name)
    return buf, hdl


@section("copy-engine and NCCL bandwidth (bf16, both ranks at once)")
def bandwidth():
    peer = 1 - RANK
    big = 256 << 20
    buf, hdl = symm_buffer((big // 2,), torch.bfloat16)
    local = torch.randn(big // 2, device=DEVICE, dtype=torch.bfloat16)
    rows = []
    for mb in (1, 4, 16, 64, 128, 256):
        n = (mb << 20) // 2
        remote = hdl.get_buffer(peer, (n,), torch.bfloat16)
        mine = hdl.get_buffer(RANK, (n,), torch.bfloat16)
        push = timed(lambda: remote.copy_(local[:n]))
        pull = timed(lambda: local[:n].copy_(remote))
        d2d = timed(lambda: mine.copy_(local[:n]))
        out = torch.empty(2 * n, device=DEVICE, dtype=torch.bfloat16)
        ag = timed(lambda: dist.all_gather_into_tensor(out, local[:n]))
        rows.append({"MB": mb, "push_ms": push, "pull_ms": pull, "local_ms": d2d, "nccl_ag_ms": ag,
                     "push_GBps": mb / 1024 / push * 1e3, "nccl_ag_GBps": mb / 1024 / ag * 1e3})
        log(f"  {mb:4d} MB  push {push:.3f} ms ({rows[-1]['push_GBps']:.0f} GB/s)  pull {pull:.3f}  "
            f"local copy {d2d:.3f}  NCCL allgather(shard={mb} MB) {ag:.3f} ({rows[-1]['nccl_ag_GBps']:.0f} GB/s)")
    RESULTS["bandwidth"] = rows
    rs_rows = []
    for mb in (16, 64, 128):
        n = (mb << 20) // 2
        full = torch.randn(2 * n, device=DEVICE, dtype=torch.bfloat16)
        out = torch.empty(n, device=DEVICE, dtype=torch.bfloat16)
        rs = timed(lambda: dist.reduce_scatter_tensor(out, full))
        ar = timed(lambda: dist.all_reduce(full))
        rs_rows.append({"out_MB": mb, "nccl_rs_ms": rs, "nccl_ar_2x_ms": ar})
        log(f"  NCCL reduce_scatter out {mb} MB: {rs:.3f} ms; all_reduce {2 * mb} MB: {ar:.3f} ms")
    RESULTS["nccl"] = rs_rows


@section("latencies (host us per call; device us for signal round trips)")
def latencies():
    peer = 1 - RANK
    buf, hdl = symm_buffer((1024,), torch.float32)
    small = torch.randn(1024, device=DEVICE)
    remote = hdl.get_buffer(peer, (1024,), torch.float32)
    RESULTS["host_us"] = {
        "copy_": host_us(lambda: remote.copy_(small)),
        "barrier": host_us(lambda: hdl.barrier(channel=0)),
        "matmul_out": host_us(lambda: torch.matmul(small.view(32, 32), small.view(32, 32), out=torch.empty(32, 32, device=DEVICE))),
        "event_record": host_us(lambda: torch.cuda.Event().record()),
        "wait_stream": host_us(lambda: torch.cuda.current_stream().wait_stream(torch.cuda.current_stream())),
    }
    def ping():
        if RANK == 0:
            hdl.put_signal(peer, channel=1)
            hdl.wait_signal(peer, channel=1)
        else:
            hdl.wait_signal(peer, channel=1)
            hdl.put_signal(peer, channel=1)
    RESULTS["device_us"] = {"barrier": 1e3 * timed(lambda: hdl.barrier(channel=0)),
                            "signal_round_trip": 1e3 * timed(ping)}
    try:
        from torch._C._distributed_c10d import _SymmetricMemory

        pad = hdl.get_signal_pad(RANK, (4,), torch.int32)
        RESULTS["host_us"]["stream_write_value32"] = host_us(lambda: _SymmetricMemory.stream_write_value32(pad, 2, 0))
    except Exception as error:
        log("  stream_write_value32:", error)
    log("  host:", {k: round(v, 1) for k, v in RESULTS["host_us"].items()})
    log("  device:", {k: round(v, 1) for k, v in RESULTS["device_us"].items()})


@section("GEMM rate and slowdown while copies / NCCL run")
def gemm():
    peer = 1 - RANK
    rows = []
    for m, k, n in ((16384, 8192, 4096), (16384, 4096, 4096), (8192, 8192, 1024), (16384, 4096, 1024),
                    (4096, 8192, 4096), (2048, 8192, 1024)):
        a = torch.randn(m, k, device=DEVICE, dtype=torch.bfloat16)
        b = torch.randn(k, n, device=DEVICE, dtype=torch.bfloat16)
        c = torch.empty(m, n, device=DEVICE, dtype=torch.bfloat16)
        ms = timed(lambda: torch.matmul(a, b, out=c))
        rows.append({"m": m, "k": k, "n": n, "ms": ms, "TFLOPs": 2 * m * k * n / ms / 1e9})
        log(f"  {m}x{k}x{n}: {ms:.3f} ms, {rows[-1]['TFLOPs']:.0f} TFLOP/s")
    RESULTS["gemm"] = rows
    # slowdown: one GEMM of 16384x8192x4096 while a 128 MB push runs on another stream
    a = torch.randn(16384, 8192, device=DEVICE, dtype=torch.bfloat16)
    b = torch.randn(8192, 4096, device=DEVICE, dtype=torch.bfloat16)
    c = torch.empty(16384, 4096, device=DEVICE, dtype=torch.bfloat16)
    n = 64 << 20
    buf, hdl = symm_buffer((n,), torch.bfloat16)
    remote = hdl.get_buffer(peer, (n,), torch.bfloat16)
    src = torch.randn(n, device=DEVICE, dtype=torch.bfloat16)
    side = torch.cuda.Stream()
    ag_out = torch.empty(2 * n, device=DEVICE, dtype=torch.bfloat16)

    def both(kind):
        def run():
            side.wait_stream(torch.cuda.current_stream())
            with torch.cuda.stream(side):
                if kind == "ce":
                    remote.copy_(src)
                else:
                    dist.all_gather_into_tensor(ag_out, src)
            torch.matmul(a, b, out=c)
            torch.cuda.current_stream().wait_stream(side)
        return run

    alone = timed(lambda: torch.matmul(a, b, out=c))
    ce = timed(lambda: remote.copy_(src))
    with_ce = timed(both("ce"))
    with_nccl = timed(both("nccl"))
    nccl = timed(lambda: dist.all_gather_into_tensor(ag_out, src))
    RESULTS["overlap_unit"] = {"gemm": alone, "ce_128MB": ce, "gemm+ce": with_ce, "nccl_ag_128MB": nccl, "gemm+nccl": with_nccl}
    log(f"  GEMM {alone:.3f} | CE push 128MB {ce:.3f} | both {with_ce:.3f} | NCCL AG {nccl:.3f} | GEMM+NCCL {with_nccl:.3f}")


# --------------------------------------------------------------------------- #
# Prototype pipelines (hand-written torch), the schedules hostir should emit
# --------------------------------------------------------------------------- #

class Streams:
    def __init__(self, count):
        self.work = [torch.cuda.Stream() for _ in range(count)]
        self.comm = [torch.cuda.Stream() for _ in range(count)]


def ag_matmul_cases(M, K, N, dtype):
    peer, D = 1 - RANK, 2
    a = torch.randn(M // D, K, device=DEVICE, dtype=dtype)
    b = torch.randn(K, N, device=DEVICE, dtype=dtype) / K ** 0.5
    gathered = torch.empty(M, K, device=DEVICE, dtype=dtype)
    out = torch.empty(M, N, device=DEVICE, dtype=dtype)

    def naive():
        dist.all_gather_into_tensor(gathered, a)
        torch.matmul(gathered, b, out=out)

    naive()
    expected = out.clone()
    cases = {"naive_nccl": naive}
    comm_alone = {"nccl": lambda: dist.all_gather_into_tensor(gathered, a)}
    gbuf, ghdl = symm_buffer((M, K), dtype)
    peer_g = ghdl.get_buffer(peer, (M, K), dtype)
    comm_alone["ce"] = lambda: peer_g[RANK * (M // D):(RANK + 1) * (M // D)].copy_(a)

    def ce_pipeline(S, streams: Streams, own_first=True):
        # rows of global A: [D, S, m] (rank-major); chunk (r, i) = rank r's i-th sub-block
        m = M // D // S
        g = gbuf.view(D, S, m, K)
        pg = peer_g.view(D, S, m, K)
        a_chunks = a.view(S, m, K)
        o = out.view(D, S, m, N)

        def run():
            user = torch.cuda.current_stream()
            ghdl.barrier(channel=0)  # peers are done reading/writing gbuf from the last run
            for i in range(S):
                comm = streams.comm[i % len(streams.comm)]
                comm.wait_stream(user)
                with torch.cuda.stream(comm):
                    pg[RANK, i].copy_(a_chunks[i])
                    ghdl.put_signal(peer, channel=1 + i)
            for i in range(S):
                w = streams.work[i % len(streams.work)]
                w.wait_stream(user)
                with torch.cuda.stream(w):
                    torch.matmul(a_chunks[i], b, out=o[RANK, i])
            for i in range(S):
                w = streams.work[i % len(streams.work)]
                with torch.cuda.stream(w):
                    ghdl.wait_signal(peer, channel=1 + i)
                    torch.matmul(g[peer, i], b, out=o[peer, i])
            for s in streams.work + streams.comm:
                user.wait_stream(s)
        return run

    def ce_loop(S, streams: Streams):
        """hostir's loop shape: iteration i pushes chunk i, waits for the peer's, multiplies [D, m]."""
        m = M // D // S
        g = gbuf.view(S, D, m, K)
        pg = peer_g.view(S, D, m, K)
        a_chunks = a.view(S, m, K)
        o = out.view(S, D, m, N)

        def run():
            user = torch.cuda.current_stream()
            ghdl.barrier(channel=0)
            for i in range(S):
                w = streams.work[i % len(streams.work)]
                comm = streams.comm[i % len(streams.comm)]
                w.wait_stream(user)
                comm.wait_stream(w)
                with torch.cuda.stream(comm):
                    pg[i, RANK].copy_(a_chunks[i])
                    g[i, RANK].copy_(a_chunks[i])
                    ghdl.put_signal(peer, channel=1 + i)
                w.wait_stream(comm)
                with torch.cuda.stream(w):
                    ghdl.wait_signal(peer, channel=1 + i)
                    torch.matmul(g[i].view(D * m, K), b, out=o[i].view(D * m, N))
                user.wait_stream(w)
        return run

    for S in (2, 4, 8):
        cases[f"ce_own_first_S{S}"] = ce_pipeline(S, Streams(S))
    for S in (4, 8):
        cases[f"ce_loop_S{S}"] = ce_loop(S, Streams(4))
    torch_fused = fused_ag(a, b)
    if torch_fused:
        cases["torch_fused"] = torch_fused
    return cases, comm_alone, (lambda: torch.matmul(gathered, b, out=out)), expected, out


def fused_ag(a, b):
    try:
        group = dist.group.WORLD.group_name
        import torch.distributed._symmetric_memory as symm_mem

        symm_mem.enable_symm_mem_for_group(group) if hasattr(symm_mem, "enable_symm_mem_for_group") else None
        op = torch.ops.symm_mem.fused_all_gather_matmul
        return lambda: op(a, [b], gather_dim=0, group_name=group)
    except Exception as error:
        log("  torch fused AG+matmul unavailable:", error)
        return None


def matmul_rs_cases(M, K, N, dtype, allreduce=False):
    peer, D = 1 - RANK, 2
    a = torch.randn(M, K // D, device=DEVICE, dtype=dtype)
    b = torch.randn(K // D, N, device=DEVICE, dtype=dtype) / K ** 0.5
    partial = torch.empty(M, N, device=DEVICE, dtype=dtype)
    out = torch.empty(M if allreduce else M // D, N, device=DEVICE, dtype=dtype)

    def naive():
        torch.matmul(a, b, out=partial)
        if allreduce:
            out.copy_(partial)
            dist.all_reduce(out)
        else:
            dist.reduce_scatter_tensor(out, partial)

    naive()
    expected = out.clone()
    cases = {"naive_nccl": naive}
    comm_alone = {"nccl": (lambda: dist.all_reduce(out)) if allreduce else (lambda: dist.reduce_scatter_tensor(out, partial))}
    recv_rows = M if allreduce else M // D
    rbuf, rhdl = symm_buffer((recv_rows, N), dtype)
    peer_r = rhdl.get_buffer(peer, (recv_rows, N), dtype)
    if allreduce:
        comm_alone["ce"] = lambda: peer_r.copy_(partial)
    else:
        comm_alone["ce"] = lambda: peer_r.copy_(partial[peer * (M // D):(peer + 1) * (M // D)])

    def ce_loop(S, streams: Streams):
        # rows of the output: rank r owns block r of every chunk: partial rows [S, D, m]
        m = M // S // D
        pa = a.view(S, D * m, K // D)
        pp = partial.view(S, D, m, N)
        r = rbuf.view(S, D * m if allreduce else m, N)
        pr = peer_r.view(S, D * m if allreduce else m, N)
        o = out.view(S, D * m if allreduce else m, N)

        def run():
            user = torch.cuda.current_stream()
            rhdl.barrier(channel=0)
            for i in range(S):
                w = streams.work[i % len(streams.work)]
                comm = streams.comm[i % len(streams.comm)]
                w.wait_stream(user)
                with torch.cuda.stream(w):
                    torch.matmul(pa[i], b, out=pp[i].view(D * m, N))
                comm.wait_stream(w)
                with torch.cuda.stream(comm):
                    if allreduce:
                        pr[i].copy_(pp[i].view(D * m, N))
                    else:
                        pr[i].copy_(pp[i, peer])
                    rhdl.put_signal(peer, channel=1 + i)
                    rhdl.wait_signal(peer, channel=1 + i)
                    if allreduce:
                        torch.add(pp[i].view(D * m, N), r[i], out=o[i])
                    else:
                        torch.add(pp[i, RANK], r[i], out=o[i])
                user.wait_stream(comm)
        return run

    for S in (2, 4, 8):
        cases[f"ce_loop_S{S}"] = ce_loop(S, Streams(4))
    if not allreduce:
        try:
            group = dist.group.WORLD.group_name
            op = torch.ops.symm_mem.fused_matmul_reduce_scatter
            cases["torch_fused"] = lambda: op(a, b, "sum", scatter_dim=0, group_name=group)
        except Exception as error:
            log("  torch fused matmul+RS unavailable:", error)
    return cases, comm_alone, (lambda: torch.matmul(a, b, out=partial)), expected, out


@section("prototype pipelines (bf16): ratio to ideal = max(fastest comm alone, matmul alone)")
def prototypes():
    shapes = [(16384, 8192, 4096), (32768, 4096, 2048), (16384, 8192, 1024)]
    if QUICK:
        shapes = shapes[:1]
    table = []
    for op in ("AG+matmul", "matmul+RS", "matmul+AR"):
        for M, K, N in shapes:
            if op == "AG+matmul":
                cases, comm, compute, expected, out = ag_matmul_cases(M, K, N, torch.bfloat16)
            else:
                cases, comm, compute, expected, out = matmul_rs_cases(M, K, N, torch.bfloat16, op == "matmul+AR")
            comm_ms = {k: timed(v) for k, v in comm.items()}
            compute_ms = timed(compute)
            ideal = max(min(comm_ms.values()), compute_ms)
            row = {"op": op, "shape": f"{M}x{K}x{N}", "comm": comm_ms, "compute": compute_ms, "ideal": ideal}
            for name, fn in cases.items():
                out.fill_(float("nan"))
                result = fn()
                torch.cuda.synchronize()
                got = result[1][0] if name == "torch_fused" and op == "AG+matmul" else (result if name == "torch_fused" else out)
                err = rel_err(got, expected)
                if not err < 2e-2:
                    row[name] = f"WRONG {err:.2e}"
                    continue
                row[name] = timed(fn) / ideal
            table.append(row)
            log(f"  {op} {M}x{K}x{N}: comm {', '.join(f'{k} {v:.3f}' for k, v in comm_ms.items())} "
                f"compute {compute_ms:.3f} ideal {ideal:.3f}")
            log("      " + "  ".join(f"{k} {v if isinstance(v, str) else f'{v:.2f}x'}" for k, v in row.items()
                                    if k not in ("op", "shape", "comm", "compute", "ideal")))
            del cases
            torch.cuda.empty_cache()
    RESULTS["prototypes"] = table


def main():
    global RANK, DEVICE
    RANK = int(os.environ["RANK"])
    DEVICE = torch.device("cuda", int(os.environ["LOCAL_RANK"]))
    torch.cuda.set_device(DEVICE)
    dist.init_process_group("nccl", device_id=DEVICE)
    environment()
    bandwidth()
    latencies()
    gemm()
    prototypes()
    if RANK == 0 and os.environ.get("OUT"):
        with open(os.path.join(os.environ["OUT"], "probe.json"), "w") as f:
            json.dump(RESULTS, f, indent=1)
    dist.barrier()
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
