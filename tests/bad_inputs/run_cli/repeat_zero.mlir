// --repeat 0 is refused (today it runs once).
// RUN: hostir-run %inputs/neg.mlir --repeat 0
// EXPECT-ERROR: ^hostir-run: error: --repeat must be at least 1
