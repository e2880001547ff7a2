// An output target that does not exist.
// RUN: hostir-opt %inputs/neg.mlir -t llvm
// EXPECT-EXIT: 2
// EXPECT-ERROR: invalid choice: 'llvm'
