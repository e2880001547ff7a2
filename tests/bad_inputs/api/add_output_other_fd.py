# add_output of another definition's tensor.
# EXPECT-RAISES: FusionDefinitionError: belongs to another FusionDefinition
from hostir import FusionDefinition, DeviceMesh, ParallelType
with FusionDefinition() as other:
    t = other.define_tensor([4])
with FusionDefinition() as fd:
    fd.add_output(t)
