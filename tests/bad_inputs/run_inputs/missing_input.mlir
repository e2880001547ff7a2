// A missing .pt file.
// RUN: hostir-run %inputs/host_2ranks.mlir --nproc 2 --inputs %t/none.pt
// EXPECT-ERROR: ^hostir-run: error: cannot load .*none.pt
