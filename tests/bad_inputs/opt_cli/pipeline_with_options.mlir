// Options on the hostir-lower pipeline, which takes none.
// RUN: hostir-opt %inputs/neg.mlir -p 'hostir-lower{x=1}'
// EXPECT-ERROR: ^error: pipeline hostir-lower takes no options
