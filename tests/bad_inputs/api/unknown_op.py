# An op nvFuser has but hostir does not (fd.ops.softmax): a located error naming it.
# EXPECT-RAISES: FusionDefinitionError: unknown_op\.py:6:\d+: fd\.ops\.softmax is not supported
from hostir import FusionDefinition, DeviceMesh, ParallelType
with FusionDefinition() as fd:
    a = fd.define_tensor([4, 8])
    fd.ops.softmax(a)
