// An empty file is an empty module (mlir-opt prints `module {}`): valid.
// SETUP: %t/empty.mlir = ""
// RUN: hostir-opt %t/empty.mlir
// EXPECT-STDOUT: ^builtin.module \{\n\}
