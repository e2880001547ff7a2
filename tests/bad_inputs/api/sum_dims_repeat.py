# sum with dims [0, 0].
# EXPECT-RAISES: FusionDefinitionError: repeat an axis
from hostir import FusionDefinition, DeviceMesh, ParallelType
with FusionDefinition() as fd:
    a = fd.define_tensor([4, 8])
    fd.ops.sum(a, dims=[0, 0])
