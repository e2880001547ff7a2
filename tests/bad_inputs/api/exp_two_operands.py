# fd.ops.exp with a second operand (it once became the hidden function-name parameter).
# EXPECT-RAISES: TypeError: exp\(\) takes 2 positional arguments but 3 were given
from hostir import FusionDefinition
with FusionDefinition() as fd:
    a = fd.define_tensor([4, 8])
    fd.add_output(fd.ops.exp(a, a))
