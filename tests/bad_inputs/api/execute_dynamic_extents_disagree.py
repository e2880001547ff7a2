# Inputs of dynamic extents that the fusion's ops cannot take together (an add of 3 and 2
# elements): refused before anything runs, at the op, instead of failing inside the run.
# EXPECT-RAISES: InputError: @fusion: inputs of dynamic extents \[3, 2\] do not fit the fusion: .*:8:19: error: 'fusion.add' op specialize-extents: at extents \[3, 2\], fusion.add axis 0: extents 3 and 2 are not broadcast-compatible
import torch
from hostir import FusionDefinition
with FusionDefinition() as fd:
    a, b = fd.define_tensor([-1]), fd.define_tensor([-1])
    fd.add_output(fd.ops.add(a, b))
fd.execute([torch.randn(3), torch.randn(2)])
