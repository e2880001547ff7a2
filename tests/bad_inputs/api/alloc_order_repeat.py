# set_allocation_order([0, 0]).
# EXPECT-RAISES: FusionDefinitionError: not a permutation
from hostir import FusionDefinition, DeviceMesh, ParallelType
with FusionDefinition() as fd:
    a = fd.define_tensor([4, 8])
a.set_allocation_order([0, 0])
