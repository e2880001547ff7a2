"""Peak memory of stream pipelines: full-size intermediates (nvFuser) vs
`stream-parallel-type{bounded-intermediates=true}` (issue 5, item 4).

With the default lowering every loop-body output gets a buffer of the whole stream
extent S; with bounded intermediates an intermediate that no one reads after its loop
gets one chunk per iteration, freed at the end of the iteration. This script lowers two
fusions both ways, runs them, and prints the peak memory allocated during one run:

  matmul+reduce   1 rank:  h = x @ w (intermediate, S chunks), y = sum(h) (output)
  AG+matmul       2 ranks: the all-gathered A (an intermediate decompose-reshardings
                  inserts) feeds the matmul of each chunk

On GPU (CUDA, NCCL for 2 ranks) the figure is torch.cuda.max_memory_allocated during the
run; on CPU (gloo) an allocation tracker (a TorchDispatchMode that counts the bytes of
every new storage until it is freed) measures the same thing. Inputs are excluded.

    python benchmarks/stream_memory.py [--json stream_memory.json] [--extent 8]
"""

from __future__ import annotations

import argparse
import json
import weakref

import torch
import torch.distributed as dist
from torch.utils import _pytree as pytree
from torch.utils._python_dispatch import TorchDispatchMode

from hostir.passes import build_passes, run_passes
from hostir.runtime import Evaluator, shard_tensor
from hostir.runtime.launcher import device_for, launch
from hostir_dialect import hir
from hostir_dialect.context import make_context, parse_module

PIPELINE = (
    "propagate-shardings,decompose-reshardings,reorder-sharded-axis,finalize-multidevice-domains,lower-to-host,"
    "stream-parallel-type{{bounded-intermediates={bounded}}},convert-op-to-communication,insert-deallocations"
)
STREAM_COUNTS = (1, 2, 4)
MIB = 2**20


def t(shape: str, mesh: bool = False) -> str:
    return f"!fusion.tensor<f32[{shape}]{', mesh=[0, 1]' if mesh else ''}>"


def matmul_reduce(s: int) -> str:
    x, w = t(f"{s}, 256, 256"), t("256, 1024")
    h, y = t(f"{s} stream, 256, 1024, r256"), t(f"{s} stream, 256, r1024")
    return f"""fusion.func @matmul_reduce(%x: {x}, %w: {w}) -> {y} {{
  %h = fusion.matmul %x, %w : {x}, {w} -> {h}
  %y = fusion.reduce sum %h dims [2] : {h} -> {y}
  fusion.return %y : {y}
}}"""


def ag_matmul(s: int) -> str:
    a, b, c = t(f"{s}, 2 didx, 128, 1024", True), t("1024, 64", True), t(f"{s} stream, 2, 128, 64, r1024", True)
    return f"""fusion.func @ag_matmul(%a: {a}, %b: {b}) -> {c} {{
  %c = fusion.matmul %a, %b : {a}, {b} -> {c}
  fusion.return %c : {c}
}}"""


CASES = {"matmul+reduce": (matmul_reduce, 1), "AG+matmul": (ag_matmul, 2)}


class AllocationTracker(TorchDispatchMode):
    """Live and peak bytes of the storages created while active (views and `out=`
    results share their input's storage and are not counted)."""

    def __init__(self):
        super().__init__()
        self.live = 0
        self.peak = 0

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        result = func(*args, **(kwargs or {}))
        inputs = {x.untyped_storage().data_ptr() for x in pytree.tree_leaves((args, kwargs)) if isinstance(x, torch.Tensor)}
        for out in pytree.tree_leaves(result):
            if isinstance(out, torch.Tensor) and out._base is None and out.untyped_storage().data_ptr() not in inputs:
                self._track(out)
        return result

    def _track(self, tensor: torch.Tensor) -> None:
        size = tensor.untyped_storage().nbytes()
        self.live += size
        self.peak = max(self.peak, self.live)
        weakref.finalize(tensor, self._free, size)

    def _free(self, size: int) -> None:
        self.live -= size


def lowered(text: str, bounded: bool):
    module = parse_module(text)
    run_passes(make_context(), module, build_passes(PIPELINE.format(bounded=str(bounded).lower())))
    return module


def peak_bytes(evaluator: Evaluator, inputs: list, device: torch.device) -> int:
    evaluator.run(inputs)  # warm-up: worker streams, process groups, allocator pools
    if device.type == "cuda":
        torch.cuda.synchronize(device)
        torch.cuda.reset_peak_memory_stats(device)
        before = torch.cuda.memory_allocated(device)
        evaluator.run(inputs)
        torch.cuda.synchronize(device)
        return torch.cuda.max_memory_allocated(device) - before
    with AllocationTracker() as tracker:
        evaluator.run(inputs)
    return tracker.peak


def measure(rank: int, world_size: int, texts: dict, extent: int) -> list[dict]:
    """On every rank: each (case, bounded, numberOfStreams) run's peak; rank 0's is kept."""
    device = device_for(dist.get_backend(), rank)
    rows = []
    for (case, bounded), text in texts.items():
        module = lowered(text, bounded)
        (program,) = [op for op in module.ops if isinstance(op, hir.ProgramOp)]
        generator = torch.Generator().manual_seed(0)
        inputs = [
            shard_tensor(torch.randn(arg.type.value_shape(), generator=generator), arg.type, rank).to(device)
            for arg in program.args
        ]
        for streams in STREAM_COUNTS:
            evaluator = Evaluator(module, rank=rank, world_size=world_size, number_of_streams=streams, device=device)
            rows.append({"case": case, "bounded": bounded, "streams": streams, "extent": extent,
                         "peak_bytes": peak_bytes(evaluator, inputs, device), "device": device.type})
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--extent", type=int, default=8, help="stream extent S (default 8)")
    parser.add_argument("--json", default=None, help="also write the results to this JSON file")
    args = parser.parse_args()
    rows = []
    for case, (fusion_text, world_size) in CASES.items():
        texts = {(case, bounded): fusion_text(args.extent) for bounded in (False, True)}
        rows += launch(measure, world_size, (texts, args.extent))[0]
    print(f"{'case':<15}{'streams':>8}{'full (MiB)':>12}{'bounded (MiB)':>15}{'ratio':>8}")
    for case in CASES:
        for streams in STREAM_COUNTS:
            full, bounded = (
                next(r["peak_bytes"] for r in rows if (r["case"], r["streams"], r["bounded"]) == (case, streams, b))
                for b in (False, True)
            )
            print(f"{case:<15}{streams:>8}{full / MIB:>12.2f}{bounded / MIB:>15.2f}{bounded / full:>8.2f}")
    if args.json:
        with open(args.json, "w") as f:
            json.dump(rows, f, indent=1)


if __name__ == "__main__":
    main()
