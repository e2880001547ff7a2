// -p without its value.
// RUN: hostir-opt %inputs/neg.mlir -p
// EXPECT-EXIT: 2
// EXPECT-ERROR: argument -p/--passes: expected one argument
