# set_device_mesh([0, 1]) with a list.
# EXPECT-RAISES: FusionDefinitionError: expects a DeviceMesh
from hostir import FusionDefinition, DeviceMesh, ParallelType
with FusionDefinition() as fd:
    a = fd.define_tensor([4, 8])
a.set_device_mesh([0, 1])
