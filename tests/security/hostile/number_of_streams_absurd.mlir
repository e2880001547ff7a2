// A billion streams asked for on the command line.
// RUN: hostir-run %inputs/neg.mlir --number-of-streams 1000000000
// LIMITS: 10 s, 1 GB
// EXPECT-ERROR: ^hostir-run: error: --number-of-streams must be at most 64, got 1000000000$
