# neg of a Scalar: a folded Scalar of its type, as nvFuser's scalar ops.
from hostir import DataType, FusionDefinition, DeviceMesh, ParallelType
with FusionDefinition() as fd:
    a = fd.define_tensor([4, 8])
    s = fd.define_scalar(2.0)
    n = fd.ops.neg(s)
    assert n.value == -2.0 and n.dtype == DataType.Double
