// An option the pass does not have: the error lists the options it has.
// RUN: hostir-opt %inputs/neg.mlir -p 'decompose-reshardings{no_such_option=1}'
// EXPECT-ERROR: ^error: pass decompose-reshardings has no option 'no_such_option'; its options: insert-after$
