// A misspelt --print-ir-after name: an error listing the known names.
// RUN: hostir-opt %inputs/neg.mlir -p hostir-lower --print-ir-after lower-to-hots
// EXPECT-ERROR: ^error: .*lower-to-hots.*(available|known).*lower-to-host
