# add of a tensor and a string.
# EXPECT-RAISES: FusionDefinitionError: neither a Tensor, a Scalar nor a number
from hostir import FusionDefinition, DeviceMesh, ParallelType
with FusionDefinition() as fd:
    a = fd.define_tensor([4, 8])
    fd.ops.add(a, 'x')
