# add of two numbers.
# EXPECT-RAISES: FusionDefinitionError: at least one operand must be a Tensor
from hostir import FusionDefinition, DeviceMesh, ParallelType
with FusionDefinition() as fd:
    a = fd.define_tensor([4, 8])
    fd.ops.add(1, 2)
