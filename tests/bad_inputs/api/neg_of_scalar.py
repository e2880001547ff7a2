# neg of a Scalar (unary ops take tensors).
# EXPECT-RAISES: FusionDefinitionError: expected a Tensor
from hostir import FusionDefinition, DeviceMesh, ParallelType
with FusionDefinition() as fd:
    a = fd.define_tensor([4, 8])
    s = fd.define_scalar(2.0)
    fd.ops.neg(s)
