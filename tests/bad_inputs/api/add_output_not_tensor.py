# add_output of a number.
# EXPECT-RAISES: FusionDefinitionError: expected a Tensor
from hostir import FusionDefinition, DeviceMesh, ParallelType
with FusionDefinition() as fd:
    fd.add_output(3)
