"""Whole tensor-parallel layers: hostir with its default settings against every way a
PyTorch user runs the same layer, in one launch.

Blocks (sequence-parallel tensor parallelism over D ranks, bf16; global X is M×H):
  mlp         Y = reduce_scatter_M(gelu_tanh(all_gather_M(X) @ W1) @ W2), W1 [H, F]
              column-sharded, W2 [F, H] row-sharded
  attention   the attention projections: QKV = all_gather_M(X) @ Wqkv (Wqkv [H, 3H]
              column-sharded, one all-gather), and O = reduce_scatter_M(A @ Wo) (A [M, H] the
              attention output, sharded on H by heads; Wo [H, H] row-sharded)
Variants, each checked against a float32 reference (relative Frobenius error, max over
ranks) before it is timed (method: measure.py):
  gemms             the block's GEMMs alone, on data already gathered (the floor)
  eager             torch, no overlap: collective, GEMM, F.gelu, GEMM, collective
  fused             torch's async-TP symmetric-memory ops (fused_all_gather_matmul,
                    fused_matmul_reduce_scatter), F.gelu between them
  compile           the eager code (functional collectives) under torch.compile
  compile_async_tp  the same with Inductor's micro-pipelined async TP
                    (`_micro_pipeline_tp`, symmetric memory enabled), as torchtitan runs it
  hostir_S{1,2,4,8} the block built with hostir's Python API in the natural formulation
                    (X [S, D, M/(S·D), H] with its D axis sharded; W1 [H, F(D didx, F/D)],
                    W2 [F(D didx, F/D), H]; Stream on the chunk axis; fd.ops.gelu), lowered by
                    `hostir-lower` and run by `Evaluator` with NO option: the defaults
                    (cost model's transport and pipelining, CUDA graph, compiled units)

    torchrun --nproc-per-node 2 benchmarks/transformer_block.py [--shapes MxHxF ...] [--rounds N] [--json PATH] [--tiny]

Prints one row per block and shape: ms of every variant, and hostir's best over the GEMMs
and over the best PyTorch variant; then the same table for runs issued back to back, as a
training loop issues them (measure.py). On GPUs it writes
benchmarks/results/transformer_block_<gpu>x<ranks>.json unless told otherwise. --tiny runs
toy sizes (CPU ranks with gloo where there are no GPUs): a smoke run of the plumbing and
the checks whose times mean nothing.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import torch
import torch.distributed as dist
import torch.nn.functional as F
from measure import Variant, add_rounds_argument, checked_timings, format_table, join_world, leave_world, machine_info, machine_kind

from hostir import DeviceMesh, FusionDefinition, ParallelType
from hostir.passes import lower
from hostir.runtime import Evaluator, shard_tensor

SHAPES = ("16384x8192x28672", "16384x4096x14336")
TINY_SHAPES = ("32x8x16",)
CHUNKS = (1, 2, 4, 8)
ROUNDS = 3
"""Rounds by default (measure.py): a drift of the machine during the launch then weighs on
every variant alike. Timed one variant after another, the small attention block's hostir ran
at 1.046-1.075x its GEMMs settled in the launches of 2026-11-26/27; in three rounds, at 0.967x
(2x H200, 2026-11-27 13:10 UTC) and, since the rounds take settled runs in turn, 0.998x
(18:15 UTC)."""
TORCH_VARIANTS = ("eager", "fused", "compile", "compile_async_tp")
RESULTS = Path(__file__).resolve().parent / "results"


@dataclass(frozen=True)
class Layer:
    """One block at one shape on this rank."""

    block: str
    m: int
    h: int
    f: int
    device: torch.device
    rank: int
    world: int
    dtype: torch.dtype = torch.bfloat16

    def random(self, *shape: int, scale: float = 1.0, seed: int = 0) -> torch.Tensor:
        generator = torch.Generator(device=self.device).manual_seed(seed)
        return (torch.randn(shape, generator=generator, device=self.device) * scale).to(self.dtype)

    def rows(self, t: torch.Tensor) -> torch.Tensor:
        """This rank's block of rows (torch's sequence-parallel layout)."""
        return t.chunk(self.world, dim=0)[self.rank]

    def cols(self, t: torch.Tensor) -> torch.Tensor:
        return t.chunk(self.world, dim=1)[self.rank]


# --------------------------------------------------------------------------- #
# The blocks' global operands and references
# --------------------------------------------------------------------------- #


def operands(layer: Layer) -> dict[str, torch.Tensor]:
    """Global operands, the same on every rank (same seeds); entries near 1 after each GEMM."""
    m, h, f = layer.m, layer.h, layer.f
    if layer.block == "mlp":
        return {"x": layer.random(m, h, seed=1), "w1": layer.random(h, f, scale=h**-0.5, seed=2),
                "w2": layer.random(f, h, scale=f**-0.5, seed=3)}
    return {"x": layer.random(m, h, seed=1), "wqkv": layer.random(h, 3 * h, scale=h**-0.5, seed=2),
            "a": layer.random(m, h, seed=3), "wo": layer.random(h, h, scale=h**-0.5, seed=4)}


def reference(layer: Layer, ops: dict[str, torch.Tensor]) -> list[torch.Tensor]:
    """The block's global outputs in float32."""
    f32 = {k: v.float() for k, v in ops.items()}
    if layer.block == "mlp":
        return [F.gelu(f32["x"] @ f32["w1"], approximate="tanh") @ f32["w2"]]
    return [f32["x"] @ f32["wqkv"], f32["a"] @ f32["wo"]]


def torch_expected(layer: Layer, ops: dict[str, torch.Tensor]) -> torch.Tensor:
    """This rank's outputs in torch's layout: MLP and O row blocks, QKV's column block."""
    outputs = reference(layer, ops)
    if layer.block == "mlp":
        return layer.rows(outputs[0]).reshape(-1)
    return torch.cat([layer.cols(outputs[0]).reshape(-1), layer.rows(outputs[1]).reshape(-1)])


# --------------------------------------------------------------------------- #
# PyTorch's ways
# --------------------------------------------------------------------------- #


class TorchBlock:
    """The block on this rank's shards, written in torch, with its buffers."""

    def __init__(self, layer: Layer):
        self.layer = layer
        self.shards: dict[str, torch.Tensor] = {}
        self.outputs: list[torch.Tensor] = []
        self.group = dist.group.WORLD.group_name

    def load(self, ops: dict[str, torch.Tensor]) -> None:
        layer = self.layer
        if layer.block == "mlp":
            self.shards = {"x": layer.rows(ops["x"]).contiguous(), "w1": layer.cols(ops["w1"]).contiguous(),
                           "w2": layer.rows(ops["w2"]).contiguous(), "x_full": ops["x"].contiguous()}
        else:
            self.shards = {"x": layer.rows(ops["x"]).contiguous(), "wqkv": layer.cols(ops["wqkv"]).contiguous(),
                           "a": layer.cols(ops["a"]).contiguous(), "wo": layer.rows(ops["wo"]).contiguous(),
                           "x_full": ops["x"].contiguous()}

    def result(self) -> torch.Tensor:
        return torch.cat([o.reshape(-1) for o in self.outputs])

    # -- variants -------------------------------------------------------------
    def gemms(self) -> None:
        s = self.shards
        if self.layer.block == "mlp":
            self.outputs = [s["x_full"] @ s["w1"] @ s["w2"]]
        else:
            self.outputs = [s["x_full"] @ s["wqkv"], s["a"] @ s["wo"]]

    def eager(self) -> None:
        s, world = self.shards, self.layer.world
        gathered = torch.empty(s["x"].shape[0] * world, s["x"].shape[1], dtype=s["x"].dtype, device=s["x"].device)
        dist.all_gather_into_tensor(gathered, s["x"])
        if self.layer.block == "mlp":
            partial = F.gelu(gathered @ s["w1"], approximate="tanh") @ s["w2"]
            qkv = None
        else:
            qkv, partial = gathered @ s["wqkv"], s["a"] @ s["wo"]
        out = torch.empty(partial.shape[0] // world, partial.shape[1], dtype=partial.dtype, device=partial.device)
        dist.reduce_scatter_tensor(out, partial)
        self.outputs = [out] if qkv is None else [qkv, out]

    def fused(self) -> None:
        import torch.distributed._symmetric_memory  # noqa: F401 -- registers torch.ops.symm_mem

        s = self.shards
        ops = torch.ops.symm_mem
        if self.layer.block == "mlp":
            _, (hidden,) = ops.fused_all_gather_matmul(s["x"], [s["w1"]], gather_dim=0, group_name=self.group)
            hidden = F.gelu(hidden, approximate="tanh")
            self.outputs = [ops.fused_matmul_reduce_scatter(hidden, s["w2"], "sum", scatter_dim=0, group_name=self.group)]
        else:
            _, (qkv,) = ops.fused_all_gather_matmul(s["x"], [s["wqkv"]], gather_dim=0, group_name=self.group)
            out = ops.fused_matmul_reduce_scatter(s["a"], s["wo"], "sum", scatter_dim=0, group_name=self.group)
            self.outputs = [qkv, out]


def functional_block(block: str, group_name: str, world: int) -> Callable[..., list[torch.Tensor]]:
    """The eager code with functional collectives, which torch.compile traces (and which
    Inductor's async-TP pass rewrites into the fused ops)."""
    from torch.distributed import _functional_collectives as funcol

    def mlp(x: torch.Tensor, w1: torch.Tensor, w2: torch.Tensor) -> list[torch.Tensor]:
        gathered = funcol.all_gather_tensor(x, 0, group_name)
        partial = F.gelu(gathered @ w1, approximate="tanh") @ w2
        return [funcol.reduce_scatter_tensor(partial, "sum", 0, group_name)]

    def attention(x: torch.Tensor, wqkv: torch.Tensor, a: torch.Tensor, wo: torch.Tensor) -> list[torch.Tensor]:
        gathered = funcol.all_gather_tensor(x, 0, group_name)
        return [gathered @ wqkv, funcol.reduce_scatter_tensor(a @ wo, "sum", 0, group_name)]

    return mlp if block == "mlp" else attention


def torch_variant(layer: Layer, name: str) -> Variant:
    block = TorchBlock(layer)
    if name in ("compile", "compile_async_tp"):
        compiled = compiled_block(layer, async_tp=name == "compile_async_tp")
        keys = ("x", "w1", "w2") if layer.block == "mlp" else ("x", "wqkv", "a", "wo")

        def run() -> None:
            block.outputs = [funcol_wait(o) for o in compiled(*(block.shards[k] for k in keys))]
    else:
        run = getattr(block, name)
    return Variant(run, block.result, block.load, lambda ops: torch_expected(layer, ops))


def funcol_wait(tensor: torch.Tensor) -> torch.Tensor:
    from torch.distributed import _functional_collectives as funcol

    return funcol.wait_tensor(tensor) if isinstance(tensor, funcol.AsyncCollectiveTensor) else tensor


def compiled_block(layer: Layer, async_tp: bool) -> Callable[..., list[torch.Tensor]]:
    import torch._inductor.config as inductor_config

    group = dist.group.WORLD.group_name
    if async_tp:
        from torch.distributed._symmetric_memory import enable_symm_mem_for_group

        enable_symm_mem_for_group(group)
    torch._dynamo.reset()  # each variant compiles afresh, under its own Inductor config
    inductor_config._micro_pipeline_tp = async_tp
    return torch.compile(functional_block(layer.block, group, layer.world), fullgraph=True)


def gemms_variant(layer: Layer) -> Variant:
    block = TorchBlock(layer)

    def expected(ops: dict[str, torch.Tensor]) -> torch.Tensor:
        f32 = {k: v.float() for k, v in ops.items()}
        if layer.block == "mlp":
            return (f32["x"] @ layer.cols(f32["w1"]) @ layer.rows(f32["w2"])).reshape(-1)
        return torch.cat([(f32["x"] @ layer.cols(f32["wqkv"])).reshape(-1),
                          (layer.cols(f32["a"]) @ layer.rows(f32["wo"])).reshape(-1)])

    return Variant(block.gemms, block.result, block.load, expected)


# --------------------------------------------------------------------------- #
# hostir
# --------------------------------------------------------------------------- #


def hostir_fusion(layer: Layer, chunks: int) -> FusionDefinition:
    """The block as a user writes it with hostir's Python API: X [S, D, M/(S·D), H] whose
    D axis is sharded (S = 1: [D, M/D, H]), weights in their natural shapes with the
    sharded dimension split over the devices, Stream on the chunk axis of the results."""
    d, m, h, f = layer.world, layer.m, layer.h, layer.f
    lead = [chunks, d] if chunks > 1 else [d]
    dtype = "bfloat16" if layer.dtype == torch.bfloat16 else "float32"
    with FusionDefinition(layer.block) as fd:
        x = fd.define_tensor([*lead, m // (chunks * d), h], dtype=dtype)
        if layer.block == "mlp":
            w1 = fd.define_tensor([h, f], dtype=dtype)
            w2 = fd.define_tensor([f, h], dtype=dtype)
            hidden = fd.ops.gelu(fd.ops.matmul(x, w1), approximate="tanh")
            outputs = [fd.ops.matmul(hidden, w2)]
            column, row, produced = [w1], [w2], [hidden]
        else:
            wqkv = fd.define_tensor([h, 3 * h], dtype=dtype)
            a = fd.define_tensor([*lead, m // (chunks * d), h], dtype=dtype)
            wo = fd.define_tensor([h, h], dtype=dtype)
            qkv = fd.ops.matmul(x, wqkv)
            outputs = [qkv, fd.ops.matmul(a, wo)]
            column, row, produced = [wqkv], [wo], [qkv]
        for out in outputs:
            fd.add_output(out)
    mesh = DeviceMesh(list(range(d)))
    for tensor in (x, *column, *row, *produced, *outputs, *([a] if layer.block == "attention" else [])):
        tensor.set_device_mesh(mesh)
    seq = 1 if chunks > 1 else 0
    x.axis(seq).parallelize(ParallelType.DIDx)
    for w in column:
        w.outer_split(1, d)
        w.axis(1).parallelize(ParallelType.DIDx)
    for w in row:
        w.outer_split(0, d)
        w.axis(0).parallelize(ParallelType.DIDx)
    last = len(lead) + 1
    for t in produced:
        t.outer_split(last, d)
        t.axis(last).parallelize(ParallelType.DIDx)
    if layer.block == "attention":
        a.outer_split(last, d)
        a.axis(last).parallelize(ParallelType.DIDx)
    outputs[-1].axis(seq).parallelize(ParallelType.DIDx)  # the reduce-scatter's rows
    if chunks > 1:
        for t in (*produced, *outputs):
            t.axis(0).parallelize(ParallelType.Stream)
    return fd


def hostir_variant(layer: Layer, chunks: int) -> Variant:
    module = lower(hostir_fusion(layer, chunks).to_module())
    evaluator = Evaluator(module, rank=layer.rank, world_size=layer.world, device=layer.device,
                          number_of_streams=max(chunks, 1))
    types = list(evaluator.function.function_type.inputs.data)
    output_types = list(evaluator.function.function_type.outputs.data)
    inputs: list[torch.Tensor] = []
    outputs: list[torch.Tensor] = []
    names = ("x", "w1", "w2") if layer.block == "mlp" else ("x", "wqkv", "a", "wo")

    def globals_of(ops: dict[str, torch.Tensor]) -> list[torch.Tensor]:
        return [ops[n].reshape(t.value_shape()) for n, t in zip(names, types)]

    def load(ops: dict[str, torch.Tensor]) -> None:
        inputs[:] = [shard_tensor(g, t, layer.rank) for g, t in zip(globals_of(ops), types)]

    def run() -> None:
        outputs[:] = evaluator.run(inputs)

    def expected(ops: dict[str, torch.Tensor]) -> torch.Tensor:
        return torch.cat([shard_tensor(r.reshape(t.value_shape()), t, layer.rank).reshape(-1)
                          for r, t in zip(reference(layer, ops), output_types)])

    return Variant(run, lambda: torch.cat([o.reshape(-1) for o in outputs]), load, expected)


# --------------------------------------------------------------------------- #
# The run
# --------------------------------------------------------------------------- #


def parse_shape(text: str) -> tuple[int, int, int]:
    parts = text.lower().split("x")
    if len(parts) != 3 or not all(p.isdigit() for p in parts):
        raise ValueError(f"a shape is MxHxF, e.g. 16384x8192x28672; got {text!r}")
    m, h, f = (int(p) for p in parts)
    return m, h, f


def variants(layer: Layer, cuda: bool) -> dict[str, Callable[[], Variant]]:
    built: dict[str, Callable[[], Variant]] = {"gemms": lambda: gemms_variant(layer), "eager": lambda: torch_variant(layer, "eager")}
    if cuda:
        for name in TORCH_VARIANTS[1:]:
            built[name] = lambda name=name: torch_variant(layer, name)
    for chunks in CHUNKS:
        if layer.m % (chunks * layer.world * 2) == 0:
            built[f"hostir_S{chunks}"] = lambda chunks=chunks: hostir_variant(layer, chunks)
    return built


def run_layer(layer: Layer, repeat: int, warmup: int, rounds: int = 1) -> dict:
    builds = variants(layer, layer.device.type == "cuda")
    return checked_timings(builds, lambda: operands(layer), layer.device, layer.dtype, repeat, warmup, rounds)


def summary_row(block: str, shape: tuple[int, int, int], results: dict, timing: str = "device_ms") -> list[str]:
    """One block's row: each variant's `timing` (a Timing field), hostir's best over its
    GEMMs alone and over the best PyTorch variant."""
    def ms(name: str) -> float | None:
        r = results.get(name)
        return getattr(r["timing"], timing) if r and r.get("status") == "ok" else None

    cells = [f"{block} {'x'.join(map(str, shape))}"]
    names = ["gemms", *TORCH_VARIANTS, *(f"hostir_S{s}" for s in CHUNKS)]
    for name in names:
        value, status = ms(name), results.get(name, {}).get("status", "—")
        cells.append(f"{value:.3f}" if value is not None else status[:14])
    hostir = [v for s in CHUNKS if (v := ms(f"hostir_S{s}")) is not None]
    torch_best = [v for n in TORCH_VARIANTS if (v := ms(n)) is not None]
    gemms = ms("gemms")
    best = min(hostir) if hostir else None
    cells.append(f"{best / gemms:.3f}" if best and gemms else "—")
    cells.append(f"{best / min(torch_best):.3f}" if best and torch_best else "—")
    return cells


def main(argv: list[str] | None = None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--shapes", nargs="+", type=parse_shape, help="MxHxF ... (default: the two layer shapes)")
    parser.add_argument("--blocks", nargs="+", choices=("mlp", "attention"), default=["mlp", "attention"])
    parser.add_argument("--repeat", type=int, help="timed runs per variant (default 20; --tiny 2)")
    parser.add_argument("--warmup", type=int, help="untimed runs first (default 5; --tiny 1)")
    add_rounds_argument(parser, "each block's variants", default=ROUNDS)
    parser.add_argument("--json", type=Path, help="write the results here")
    parser.add_argument("--tiny", action="store_true", help="toy sizes: a smoke run of the plumbing and the checks")
    args = parser.parse_args(argv)
    shapes = args.shapes or [parse_shape(s) for s in (TINY_SHAPES if args.tiny else SHAPES)]
    repeat, warmup = args.repeat or (2 if args.tiny else 20), args.warmup or (1 if args.tiny else 5)
    device, joined = join_world()
    rank, world = dist.get_rank(), dist.get_world_size()
    rows, back_to_back, records = [], [], []  # records: what main returns (and writes as JSON)
    for block in args.blocks:
        for m, h, f in shapes:
            layer = Layer(block, m, h, f, device, rank, world)
            results = run_layer(layer, repeat, warmup, args.rounds)
            rows.append(summary_row(block, (m, h, f), results))
            back_to_back.append(summary_row(block, (m, h, f), results, "back_to_back_ms"))
            records.append({"block": block, "shape": [m, h, f], "results": {
                name: {k: (v.__dict__ if hasattr(v, "__dict__") else v) for k, v in r.items()}
                for name, r in results.items()}})
    if rank == 0:
        header = ["block MxHxF", "gemms", *TORCH_VARIANTS, *(f"hostir_S{s}" for s in CHUNKS), "hostir/gemms",
                  "hostir/best torch"]
        print(f"ms per run (median of {repeat}, max over {world} ranks), {machine_kind(device)}, bf16, hostir defaults")
        print(format_table(header, rows))
        print(f"ms per run of {repeat} issued back to back (max over {world} ranks)")
        print(format_table(header, back_to_back))
        out = args.json or (None if args.tiny or device.type != "cuda"
                            else RESULTS / f"transformer_block_{machine_kind(device)}.json")
        if out is not None:
            report = {"machine": machine_info(device, "bf16"), "repeat": repeat, "rounds": args.rounds, "layers": records}
            out.write_text(json.dumps(report, indent=1) + "\n")
    leave_world(joined)
    return {"rounds": args.rounds, "layers": records}


if __name__ == "__main__":
    main()
    sys.exit(0)
