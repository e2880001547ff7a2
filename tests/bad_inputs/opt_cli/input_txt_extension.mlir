// MLIR text in a file named .txt: mlir-opt parses it; the extension must not matter.
// RUN: hostir-opt %t/fusion.txt
// SETUP: %t/fusion.txt = open('tests/bad_inputs/inputs/neg.mlir').read()
// EXPECT-STDOUT: fusion.func @neg
