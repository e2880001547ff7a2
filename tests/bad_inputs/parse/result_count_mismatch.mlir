// Two result names for a one-result op.
// RUN: hostir-opt %s
fusion.func @f(%a: !fusion.tensor<f32[4, 8]>) -> !fusion.tensor<f32[4, 8]> {
  // EXPECT-ERROR@+1:3: (?i)(1|one) results?.*2|2 .*(names|results).*1|result
  %b, %c = fusion.neg %a : !fusion.tensor<f32[4, 8]> -> !fusion.tensor<f32[4, 8]>
  fusion.return %b : !fusion.tensor<f32[4, 8]>
}
