# add with a tensor of another definition.
# EXPECT-RAISES: FusionDefinitionError: belongs to another FusionDefinition
from hostir import FusionDefinition, DeviceMesh, ParallelType
with FusionDefinition() as other:
    t = other.define_tensor([4, 8])
with FusionDefinition() as fd:
    a = fd.define_tensor([4, 8])
    fd.ops.add(a, t)
