# add(a, None).
# EXPECT-RAISES: FusionDefinitionError: neither a Tensor
from hostir import FusionDefinition, DeviceMesh, ParallelType
with FusionDefinition() as fd:
    a = fd.define_tensor([4, 8])
    fd.ops.add(a, None)
