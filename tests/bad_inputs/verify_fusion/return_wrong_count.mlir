// fusion.return of two values from a one-result function.
// RUN: hostir-opt %s
// EXPECT-ERROR@+1:1: returned types .* do not match the declared results
fusion.func @f(%a: !fusion.tensor<f32[4, 8]>) -> !fusion.tensor<f32[4, 8]> {
  %b = fusion.neg %a : !fusion.tensor<f32[4, 8]> -> !fusion.tensor<f32[4, 8]>
  fusion.return %a, %b : !fusion.tensor<f32[4, 8]>, !fusion.tensor<f32[4, 8]>
}
