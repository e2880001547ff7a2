// The file ends in the middle of an op: located at the end of the file.
// RUN: hostir-opt %s
// EXPECT-ERROR@6:1: (?i)expected .*type|type expected
fusion.func @f(%a: !fusion.tensor<f32[4, 8]>) -> !fusion.tensor<f32[4, 8]> {
  %b = fusion.neg %a :
