// An option the pass does not have.
// RUN: hostir-opt %inputs/neg.mlir -p 'decompose-reshardings{no_such_option=1}'
// EXPECT-ERROR: ^error: .*no_such_option
