# sum with dims=[0.0].
# EXPECT-RAISES: FusionDefinitionError: dims must be
from hostir import FusionDefinition, DeviceMesh, ParallelType
with FusionDefinition() as fd:
    a = fd.define_tensor([4, 8])
    fd.ops.sum(a, dims=[0.0])
