# select with index -1 (torch's last element; nvFuser refuses).
# EXPECT-RAISES: FusionDefinitionError: out of range
from hostir import FusionDefinition, DeviceMesh, ParallelType
with FusionDefinition() as fd:
    a = fd.define_tensor([4, 8])
    fd.ops.select(a, -1, 0)
