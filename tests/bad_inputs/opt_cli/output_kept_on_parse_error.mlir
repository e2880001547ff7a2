// -o onto an existing file with an input that fails: the file is untouched.
// RUN: hostir-opt tests/bad_inputs/inputs/invalid.mlir -o %t/out.mlir
// SETUP: %t/out.mlir = 'precious\n'
// KEEP: %t/out.mlir
// EXPECT-ERROR: tests/bad_inputs/inputs/invalid.mlir:3:3: error: 'fusion.exp' op
