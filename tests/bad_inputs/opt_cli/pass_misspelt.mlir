// A misspelt pass name lists the known ones.
// RUN: hostir-opt %inputs/neg.mlir -p lower-to-hots
// EXPECT-ERROR: ^error: unknown pass 'lower-to-hots'; available: .*lower-to-host
