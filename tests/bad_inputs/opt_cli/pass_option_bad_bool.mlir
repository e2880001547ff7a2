// A boolean pass option given a non-boolean value: the error names the option, the pass, what it takes.
// RUN: hostir-opt %inputs/neg.mlir -p 'decompose-reshardings{insert_after=maybe}'
// EXPECT-ERROR: ^error: option insert_after of pass decompose-reshardings takes true or false, got maybe$
