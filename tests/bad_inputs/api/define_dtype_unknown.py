# dtype 'float' (ambiguous, not a name hostir knows).
# EXPECT-RAISES: FusionDefinitionError: unsupported dtype 'float'
from hostir import FusionDefinition, DeviceMesh, ParallelType
with FusionDefinition() as fd:
    fd.define_tensor([4], dtype='float')
