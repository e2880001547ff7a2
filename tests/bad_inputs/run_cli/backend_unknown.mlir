// --backend mpi.
// RUN: hostir-run %inputs/host_2ranks.mlir --backend mpi
// EXPECT-EXIT: 2
// EXPECT-ERROR: argument --backend: invalid choice: 'mpi'
