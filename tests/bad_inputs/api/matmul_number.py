# matmul of a tensor by 3.
# EXPECT-RAISES: FusionDefinitionError: expected a Tensor
from hostir import FusionDefinition, DeviceMesh, ParallelType
with FusionDefinition() as fd:
    a = fd.define_tensor([4, 8])
    fd.ops.matmul(a, 3)
