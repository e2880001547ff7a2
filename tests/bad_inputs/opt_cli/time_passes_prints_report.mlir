// --time-passes prints the timing report (on stderr, as MLIR).
// RUN: hostir-opt %inputs/neg.mlir -p hostir-lower --time-passes
// EXPECT-STDERR: (?i)execution tim
