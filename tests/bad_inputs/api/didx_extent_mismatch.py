# DIDx on an axis of extent 4 over a mesh of 2.
# EXPECT-RAISES: FusionDefinitionError: does not match the 2 devices
from hostir import FusionDefinition, DeviceMesh, ParallelType
with FusionDefinition() as fd:
    a = fd.define_tensor([4, 8])
    fd.add_output(fd.ops.neg(a))
a.set_device_mesh(DeviceMesh([0, 1]))
a.axis(0).parallelize(ParallelType.DIDx)
str(fd)
