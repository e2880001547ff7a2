# DIDx without a device mesh: reported when the fusion is emitted.
# EXPECT-RAISES: FusionDefinitionError: without a device mesh
from hostir import FusionDefinition, DeviceMesh, ParallelType
with FusionDefinition() as fd:
    a = fd.define_tensor([4, 8])
    fd.add_output(fd.ops.neg(a))
a.axis(0).parallelize(ParallelType.DIDx)
str(fd)
