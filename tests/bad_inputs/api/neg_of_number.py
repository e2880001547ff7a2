# neg of a number: a folded constant, as nvFuser's scalar ops.
from hostir import FusionDefinition, DeviceMesh, ParallelType
with FusionDefinition() as fd:
    a = fd.define_tensor([4, 8])
    assert fd.ops.neg(3).value == -3
