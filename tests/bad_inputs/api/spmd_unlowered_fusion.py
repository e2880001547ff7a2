# run_spmd of a sharded FusionDefinition without lower=True: refused, not run as eager torch on each rank's shard.
# EXPECT-RAISES: ValueError|SpmdError: (?i)(lower=True|not lowered|lower it)
import torch
from hostir import runtime
from hostir_dialect import parse_module
X = '!fusion.tensor<f32[2 didx, 4], mesh=[0, 1]>'
G = '!fusion.tensor<f32[2, 4], mesh=[0, 1]>'
P = f'''hir.program @main(%x: {X}) -> {G} {{
  %o = hir.allocate : {G}
  %w = hir.allgather %x -> %o team [0, 1] : {X} -> {G}
  hir.wait %w
  hir.return %o : {G}
}}'''
from hostir import FusionDefinition, DeviceMesh, ParallelType
with FusionDefinition() as fd:
    a = fd.define_tensor([2, 4])
    b = fd.ops.sum(a, dims=[0])
    fd.add_output(b)
for t in (a, b):
    t.set_device_mesh(DeviceMesh([0, 1]))
a.axis(0).parallelize(ParallelType.DIDx)
out = runtime.run_spmd(fd, [[torch.ones(1, 4)], [torch.ones(1, 4)]], world_size=2, backend='gloo')
print('rank outputs:', out)
