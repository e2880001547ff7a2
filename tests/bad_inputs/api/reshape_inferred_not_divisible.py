# reshape [4, 8] to [-1, 5]: 32 is not a multiple of 5.
# EXPECT-RAISES: FusionDefinitionError: (?i)(cannot reshape|divis|multiple)
from hostir import FusionDefinition, DeviceMesh, ParallelType
with FusionDefinition() as fd:
    a = fd.define_tensor([4, 8])
    fd.ops.reshape(a, [-1, 5])
