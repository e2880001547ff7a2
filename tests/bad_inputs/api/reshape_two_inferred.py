# reshape to [-1, -1]: two extents to infer.
# EXPECT-RAISES: FusionDefinitionError: (?i)(one|single|at most).*-1|-1
from hostir import FusionDefinition, DeviceMesh, ParallelType
with FusionDefinition() as fd:
    a = fd.define_tensor([4, 8])
    fd.ops.reshape(a, [-1, -1])
