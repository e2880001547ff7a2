# fd.lower(pipeline=...) with a boolean option spelt as a word: the error names the option and the pipeline.
# EXPECT-RAISES: ValueError: ^option bounded-intermediates of pipeline hostir-lower takes true or false, got yes$
from hostir import FusionDefinition
with FusionDefinition() as fd:
    a = fd.define_tensor([4, 8])
    fd.add_output(fd.ops.neg(a))
fd.lower(pipeline="hostir-lower{bounded-intermediates=yes}")
