# run_spmd of a .mlir path that does not exist.
# EXPECT-RAISES: FileNotFoundError|ValueError: (?i)nothing.mlir
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
runtime.run_spmd('nothing.mlir', [[torch.zeros(1, 4)], [torch.zeros(1, 4)]], world_size=2)
