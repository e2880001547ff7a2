// A fusion.func declaration without a body.
// RUN: hostir-opt %s
// EXPECT-ERROR@+1:1: (?i)body|region|expected
fusion.func @f(%a: !fusion.tensor<f32[4, 8]>) -> !fusion.tensor<f32[4, 8]>
