# An op nvFuser has but hostir does not (fd.ops.softmax): a clear AttributeError naming it.
# EXPECT-RAISES: AttributeError: softmax
from hostir import FusionDefinition, DeviceMesh, ParallelType
with FusionDefinition() as fd:
    a = fd.define_tensor([4, 8])
    fd.ops.softmax(a)
