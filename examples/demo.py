"""The README's demo: build a sharded, stream-pipelined fusion with the Python API, print
its IR, check that hostir-opt reads it back identically, lower it to a host program and
run that on 2 ranks (CPU processes with gloo, or 2 GPUs with NCCL when present), checked
against eager torch on the unsharded data.

The fusion is nvFuser's all-gather + linear overlap test: x[s, d, m/(s*d), k] is sharded
over d = 2 devices along axis 1; the output is replicated and pipelined over CUDA streams
along axis 0, so each chunk's all-gather overlaps the previous chunk's matmul.
"""

import subprocess
import sys

import torch

from hostir import DeviceMesh, FusionDefinition, ParallelType, runtime

S, D, M, K, N = 4, 2, 64, 32, 16
TOLERANCE = 1e-4  # float32 matmul over K = 32, relative to the largest output value


def define() -> FusionDefinition:
    with FusionDefinition() as fd:
        x = fd.define_tensor([S, D, M // (S * D), K], dtype="float32")
        w = fd.define_tensor([N, K], dtype="float32")
        b = fd.define_tensor([N], dtype="float32")
        y = fd.ops.linear(x, w, bias=b)
        fd.add_output(y)
    mesh = DeviceMesh(list(range(D)))
    for t in (x, w, b, y):
        t.set_device_mesh(mesh)
    x.axis(1).parallelize(ParallelType.DIDx)
    y.axis(0).parallelize(ParallelType.Stream)
    return fd


def section(title: str) -> None:
    print(f"\n=== {title} " + "=" * (70 - len(title)))


def main() -> int:
    fd = define()
    fusion_text = str(fd)
    section("fusion IR (Python frontend)")
    print(fusion_text)

    reparsed = subprocess.run([sys.executable, "-m", "hostir.passes.opt"], input=fusion_text, capture_output=True, text=True, check=True).stdout
    assert reparsed.strip() == fusion_text.strip(), "hostir-opt did not print the fusion back identically"
    print("hostir-opt round trip: identical")

    host = fd.lower()
    section("host program (hostir-lower)")
    print(host)

    torch.manual_seed(0)
    fusion = fd.to_module()
    global_inputs = [torch.randn(S, D, M // (S * D), K), torch.randn(N, K), torch.randn(N)]
    input_types = [arg.type for arg in fusion.body.block.first_op.args]
    per_rank = [[runtime.shard_tensor(g, t, rank) for g, t in zip(global_inputs, input_types)] for rank in range(D)]
    outputs = runtime.run_spmd(host, per_rank, world_size=D)

    (expected,) = runtime.run_fusion(fusion, global_inputs)
    output_type = fusion.body.block.first_op.function_type.outputs.data[0]
    got = runtime.unshard({rank: outputs[rank][0] for rank in range(D)}, output_type)
    error = (got - expected).abs().max().item() / expected.abs().max().item()
    section(f"run on {D} ranks ({runtime.launcher.default_backend(D)})")
    print(f"output {tuple(got.shape)} {got.dtype}; max relative error vs eager torch: {error:.2e}")
    if error > TOLERANCE:
        print(f"FAILED: error above {TOLERANCE}")
        return 1
    print("OK")
    return 0


if __name__ == "__main__":
    sys.exit(main())
