// Two files for a one-argument program.
// RUN: hostir-run %inputs/host_2ranks.mlir --nproc 2 --inputs %t/x.pt %t/x.pt
// SETUP: %t/x.pt = torch.zeros(2, 8)
// EXPECT-ERROR: @main takes 1 inputs, 2 files given
