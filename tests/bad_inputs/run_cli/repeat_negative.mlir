// --repeat -3 is refused.
// RUN: hostir-run %inputs/neg.mlir --repeat -3
// EXPECT-ERROR: ^hostir-run: error: --repeat must be at least 1
