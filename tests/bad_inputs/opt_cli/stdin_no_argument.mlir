// Without an input file hostir-opt reads standard input.
// RUN: hostir-opt < %inputs/neg.mlir
// EXPECT-STDOUT: fusion.func @neg
