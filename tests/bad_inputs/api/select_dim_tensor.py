# select with a tensor where the dim goes (an AttributeError traceback from xDSL before).
# EXPECT-RAISES: FusionDefinitionError: fd.ops.select: dim must be an int, got Tensor\(T0
from hostir import FusionDefinition
with FusionDefinition() as fd:
    a = fd.define_tensor([4, 8])
    fd.ops.select(a, 0, a)
