# An op after the `with` block has ended.
# EXPECT-RAISES: FusionDefinitionError: closed
from hostir import FusionDefinition, DeviceMesh, ParallelType
with FusionDefinition() as fd:
    a = fd.define_tensor([4, 8])
fd.ops.neg(a)
