// `hostir-opt -` reads standard input, as mlir-opt does.
// RUN: hostir-opt - < %inputs/neg.mlir
// EXPECT-STDOUT: fusion.func @neg
