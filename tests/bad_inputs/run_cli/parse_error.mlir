// A parse error is located in the user's file.
// RUN: hostir-run tests/bad_inputs/inputs/parse_error.mlir
// EXPECT-ERROR: ^tests/bad_inputs/inputs/parse_error.mlir:2:\d+: error: 
