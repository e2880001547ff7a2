// A world of no ranks is refused even where the input holds no host program to check.
// RUN: hostir-opt %inputs/neg.mlir -p 'verify-collective-order{world-size=-2}'
// EXPECT-ERROR: ^error: world-size must be at least 1, got -2$
