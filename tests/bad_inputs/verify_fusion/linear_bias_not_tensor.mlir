// linear with a scalar bias (generic form).
// RUN: hostir-opt %s
fusion.func @f(%a: !fusion.tensor<f32[4, 8]>) -> !fusion.tensor<f32[4, 4, r8]> {
  %s = arith.constant 2.0 : f32
  %w = fusion.set %a : !fusion.tensor<f32[4, 8]> -> !fusion.tensor<f32[4, 8]>
  // EXPECT-ERROR@+1:3: (?i)tensor|bias|operand
  %b = "fusion.linear"(%a, %w, %s) <{operandSegmentSizes = array<i32: 1, 1, 1, 0>}> : (!fusion.tensor<f32[4, 8]>, !fusion.tensor<f32[4, 8]>, f32) -> !fusion.tensor<f32[4, 4, r8]>
  fusion.return %b : !fusion.tensor<f32[4, 4, r8]>
}
