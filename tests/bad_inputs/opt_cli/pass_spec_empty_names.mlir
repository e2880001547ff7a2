// A pass pipeline of empty names (',,').
// RUN: hostir-opt %inputs/neg.mlir -p ,,
// EXPECT-ERROR: ^error: .*(empty|pass|pipeline)
