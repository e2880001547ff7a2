# A complex torch dtype.
# EXPECT-RAISES: FusionDefinitionError: unsupported dtype
from hostir import FusionDefinition, DeviceMesh, ParallelType
import torch
with FusionDefinition() as fd:
    fd.define_tensor([4], dtype=torch.complex64)
