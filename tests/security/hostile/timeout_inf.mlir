// --timeout inf passed the option check and overflowed inside a rank.
// RUN: hostir-run %inputs/neg.mlir --timeout inf
// LIMITS: 10 s, 1 GB
// EXPECT-ERROR: ^hostir-run: error: --timeout must be positive and at most 604800 seconds \(a week\), got
