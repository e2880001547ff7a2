// An input file that does not exist.
// RUN: hostir-opt %t/nothing.mlir
// EXPECT-ERROR: ^error: No such file or directory: .*nothing.mlir
