// RUN: not hostir-opt %t.does-not-exist.mlir 2>&1 | filecheck %s

// A missing input file: a one-line error naming it, exit code 1, no traceback.
// CHECK: error: No such file or directory: {{.*}}does-not-exist.mlir
// CHECK-NOT: Traceback
