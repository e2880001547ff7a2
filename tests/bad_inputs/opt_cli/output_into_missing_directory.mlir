// -o into a directory that does not exist: one line, exit 1.
// RUN: hostir-opt %inputs/neg.mlir -o %t/no/such/dir/out.mlir
// EXPECT-ERROR: ^error: No such file or directory: %t/no/such/dir/out.mlir$
