// --nproc two.
// RUN: hostir-run %inputs/host_2ranks.mlir --nproc two
// EXPECT-EXIT: 2
// EXPECT-ERROR: argument --nproc: invalid int value
