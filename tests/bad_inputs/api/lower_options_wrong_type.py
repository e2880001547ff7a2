# fd.lower(options='verbose'): options must be PassManagerOptions.
# EXPECT-RAISES: TypeError|ValueError: (?i)PassManagerOptions|options
from hostir import FusionDefinition, DeviceMesh, ParallelType
import torch
with FusionDefinition() as fd:
    a = fd.define_tensor([4, 8])
    fd.add_output(fd.ops.neg(a))
fd.lower(options='verbose')
