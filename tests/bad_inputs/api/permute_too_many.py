# permute [0, 1, 2] of a 2-d tensor.
# EXPECT-RAISES: FusionDefinitionError: not a permutation
from hostir import FusionDefinition, DeviceMesh, ParallelType
with FusionDefinition() as fd:
    a = fd.define_tensor([4, 8])
    fd.ops.permute(a, [0, 1, 2])
