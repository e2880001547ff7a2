# launch() of a lambda, which spawned processes cannot unpickle: refused before spawning.
# EXPECT-RAISES: ValueError|TypeError: (?i)(module-level|picklable|lambda)
import torch
from hostir import runtime
from hostir_dialect import parse_module
X = '!fusion.tensor<f32[2 didx, 4], mesh=[0, 1]>'
G = '!fusion.tensor<f32[2, 4], mesh=[0, 1]>'
P = f'''hir.program @main(%x: {X}) -> {G} {{
  %o = hir.allocate : {G}
  %w = hir.allgather %x -> %o team [0, 1] : {X} -> {G}
  hir.wait %w
  hir.return %o : {G}
}}'''
runtime.launch(lambda rank, world: rank, 2, backend='gloo')
