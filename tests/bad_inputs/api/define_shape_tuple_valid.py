# A shape given as a tuple: valid.
from hostir import FusionDefinition, DeviceMesh, ParallelType
with FusionDefinition() as fd:
    a = fd.define_tensor((4, 8))
    fd.add_output(fd.ops.neg(a))
str(fd)
