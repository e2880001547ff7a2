// -o onto its own (failing) input: the input survives.
// RUN: hostir-opt %t/in.mlir -o %t/in.mlir
// SETUP: %t/in.mlir = open('tests/bad_inputs/inputs/invalid.mlir').read()
// KEEP: %t/in.mlir
// EXPECT-ERROR: in.mlir:3:3: error: 'fusion.exp' op
