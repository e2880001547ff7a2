// Two input files: hostir-opt takes one.
// RUN: hostir-opt %inputs/neg.mlir %inputs/neg.mlir
// EXPECT-EXIT: 2
// EXPECT-ERROR: unrecognized arguments
