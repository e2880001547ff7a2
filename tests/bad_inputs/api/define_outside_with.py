# define_tensor before entering the `with` block.
# EXPECT-RAISES: FusionDefinitionError: inside `with FusionDefinition
from hostir import FusionDefinition, DeviceMesh, ParallelType
fd = FusionDefinition()
fd.define_tensor([4])
