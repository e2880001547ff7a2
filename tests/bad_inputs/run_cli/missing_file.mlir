// A file that does not exist.
// RUN: hostir-run %t/nothing.mlir
// EXPECT-ERROR: ^hostir-run: error: cannot read .*nothing.mlir: No such file
