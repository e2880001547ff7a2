// --allow-unregistered-dialect accepts an unknown op.
// RUN: hostir-opt tests/bad_inputs/inputs/unregistered_op.mlir --allow-unregistered-dialect
// EXPECT-STDOUT: foo.bar
