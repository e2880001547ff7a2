# run_spmd with inputs for 1 rank in a world of 2.
# EXPECT-RAISES: ValueError: inputs for 1 ranks but the world has 2
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
runtime.run_spmd(P, [[torch.zeros(1, 4)]], world_size=2, backend='gloo')
