// A misspelt --disable-pass name: an error listing the known names, not silently ignored.
// RUN: hostir-opt %inputs/neg.mlir -p hostir-lower --disable-pass decompose-resharding
// EXPECT-ERROR: ^error: .*decompose-resharding.*(available|known).*decompose-reshardings
