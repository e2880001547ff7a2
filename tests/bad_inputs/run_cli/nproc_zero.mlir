// --nproc 0.
// RUN: hostir-run %inputs/host_2ranks.mlir --nproc 0
// EXPECT-ERROR: ^hostir-run: error: --nproc must be at least 1
