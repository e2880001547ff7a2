// A pipeline's boolean option given a number: the error names the option and the pipeline.
// RUN: hostir-opt %inputs/neg.mlir -p 'hostir-lower{cuda-graph=1}'
// EXPECT-ERROR: ^error: option cuda-graph of pipeline hostir-lower takes true or false, got 1$
