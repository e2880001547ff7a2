// MLIR text in a file without an extension.
// RUN: hostir-opt %t/fusion
// SETUP: %t/fusion = open('tests/bad_inputs/inputs/neg.mlir').read()
// EXPECT-STDOUT: fusion.func @neg
