# neg of a number.
# EXPECT-RAISES: FusionDefinitionError: expected a Tensor
from hostir import FusionDefinition, DeviceMesh, ParallelType
with FusionDefinition() as fd:
    a = fd.define_tensor([4, 8])
    fd.ops.neg(3)
