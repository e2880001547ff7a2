// A boolean pass option given a non-boolean value.
// RUN: hostir-opt %inputs/neg.mlir -p 'decompose-reshardings{insert_after=maybe}'
// EXPECT-ERROR: ^error: .*(insert_after|bool|maybe)
