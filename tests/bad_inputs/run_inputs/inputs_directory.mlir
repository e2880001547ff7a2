// A directory as --inputs.
// RUN: hostir-run %inputs/host_2ranks.mlir --nproc 2 --inputs %t
// EXPECT-ERROR: ^hostir-run: error: cannot load
