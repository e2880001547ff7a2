// An .mlir file passed as a tensor.
// RUN: hostir-run %inputs/host_2ranks.mlir --nproc 2 --inputs %t/x.pt
// SETUP: %t/x.pt = 'builtin.module {}'
// EXPECT-ERROR: ^hostir-run: error: cannot load .*x.pt
