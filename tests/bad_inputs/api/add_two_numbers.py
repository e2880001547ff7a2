# add of two numbers: nvFuser folds ops of scalars (its transformer tests take a
# reciprocal of a scalar), so hostir computes the constant.
from hostir import FusionDefinition, DeviceMesh, ParallelType
with FusionDefinition() as fd:
    a = fd.define_tensor([4, 8])
    assert fd.ops.add(1, 2).value == 3
