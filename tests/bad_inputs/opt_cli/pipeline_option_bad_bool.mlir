// A pipeline's boolean option given a number: the error names the member pass that declares it.
// RUN: hostir-opt %inputs/neg.mlir -p 'hostir-lower{cuda-graph=1}'
// EXPECT-ERROR: ^error: option cuda-graph of pass choose-pipelining takes true or false, got 1$
