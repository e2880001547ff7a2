// --split-input-file: an error in the second chunk is located in the whole file.
// RUN: hostir-opt tests/bad_inputs/inputs/two_chunks.mlir --split-input-file
// EXPECT-ERROR: ^tests/bad_inputs/inputs/two_chunks.mlir:7:3: error: 'fusion.exp' op
