// An empty .pt file.
// RUN: hostir-run %inputs/host_2ranks.mlir --nproc 2 --inputs %t/x.pt
// SETUP: %t/x.pt = b''
// EXPECT-ERROR: ^hostir-run: error: cannot load .*x.pt
