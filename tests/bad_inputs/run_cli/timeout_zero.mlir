// --timeout 0: refused, not a launch that times out at once.
// RUN: hostir-run %inputs/neg.mlir --timeout 0
// EXPECT-ERROR: ^hostir-run: error: (?!.*rank \d+ failed).*--timeout must be (positive|greater than 0|at least)
