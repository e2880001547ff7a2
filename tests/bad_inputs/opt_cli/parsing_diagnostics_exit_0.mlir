// --parsing-diagnostics prints a parse error and exits 0, as --help promises.
// RUN: hostir-opt tests/bad_inputs/inputs/parse_error.mlir --parsing-diagnostics
// EXPECT-STDOUT: parse_error.mlir:2:\d+: error: 
