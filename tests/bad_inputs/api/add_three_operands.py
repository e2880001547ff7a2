# fd.ops.add with a third operand: Python's own TypeError (the elementwise ops once took a
# hidden third parameter, the function's name, and failed with a KeyError traceback).
# EXPECT-RAISES: TypeError: add\(\) takes 3 positional arguments but 4 were given
from hostir import FusionDefinition
with FusionDefinition() as fd:
    a = fd.define_tensor([4, 8])
    fd.add_output(fd.ops.add(a, a, a))
