# fd.execute of a 2-device fusion without torch.distributed: refused with a hint.
# EXPECT-RAISES: ValueError|ExecutionError|InputError|HostIRError: (?i)(run_spmd|torch.distributed|world)
from hostir import FusionDefinition, DeviceMesh, ParallelType
import torch
with FusionDefinition() as fd:
    a = fd.define_tensor([2, 8])
    b = fd.ops.set(a)
    fd.add_output(b)
for t in (a, b):
    t.set_device_mesh(DeviceMesh([0, 1]))
a.axis(0).parallelize(ParallelType.DIDx)
fd.execute([torch.zeros(1, 8)], rank=0, world_size=2)
