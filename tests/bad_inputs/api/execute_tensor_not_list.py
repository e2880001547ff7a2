# fd.execute(tensor) instead of fd.execute([tensor]).
# EXPECT-RAISES: InputError|TypeError: (?i)(list|sequence|takes 1 inputs)
from hostir import FusionDefinition, DeviceMesh, ParallelType
import torch
with FusionDefinition() as fd:
    a = fd.define_tensor([4, 8])
    fd.add_output(fd.ops.neg(a))
fd.execute(torch.zeros(4, 8))
