# slice stops beyond the extent, with nvFuser's manual normalization (without it, they clamp).
# EXPECT-RAISES: FusionDefinitionError: out of bounds
from hostir import FusionDefinition, DeviceMesh, ParallelType
with FusionDefinition() as fd:
    a = fd.define_tensor([4, 8])
    fd.ops.slice(a, [0, 0], [9, 8], manual_normalization=True)
