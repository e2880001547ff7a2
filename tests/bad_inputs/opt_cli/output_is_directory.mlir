// -o naming a directory: the message names it.
// RUN: hostir-opt %inputs/neg.mlir -o %t
// EXPECT-ERROR: ^error: Is a directory: %t$
