// A 2-device program on 3 ranks: rank 2 holds nothing; valid, checked against the reference.
// RUN: hostir-run %inputs/host_2ranks.mlir --nproc 3
// EXPECT-STDOUT: max error vs reference 0\b
