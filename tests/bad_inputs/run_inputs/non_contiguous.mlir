// A transposed (non-contiguous) tensor: valid, it runs.
// RUN: hostir-run %inputs/host_2ranks.mlir --nproc 2 --inputs %t/x.pt
// SETUP: %t/x.pt = torch.arange(16.0).reshape(8, 2).t()
// EXPECT-STDOUT: max error vs reference 0\b
