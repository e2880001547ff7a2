"""Build a sharded, stream-pipelined fusion with the Python frontend and print its IR.

    python examples/frontend_demo.py | hostir-opt

nvFuser's test_overlap_allgather_matmul_stream_outermost: the input x[s, d, m/(s*d), k] is
sharded over d = 2 devices along axis 1; the linear's output is replicated and pipelined
over CUDA streams along axis 0, so each of the s = 4 chunks all-gathers its rows while the
previous chunk's matmul runs.
"""

from hostir_dialect import DeviceMesh, FusionDefinition, ParallelType

S, D, M, K, N = 4, 2, 64, 32, 16
MESH = DeviceMesh(list(range(D)))

with FusionDefinition() as fd:
    x = fd.define_tensor([S, D, M // (S * D), K], dtype="float32")
    w = fd.define_tensor([N, K], dtype="float32")
    b = fd.define_tensor([N], dtype="float32")
    y = fd.ops.linear(x, w, bias=b)
    fd.add_output(y)

for t in (x, w, b, y):
    t.set_device_mesh(MESH)
x.axis(1).parallelize(ParallelType.DIDx)  # each rank holds one of the D row blocks
y.axis(0).parallelize(ParallelType.Stream)  # S chunks on rotating streams

print(fd)
