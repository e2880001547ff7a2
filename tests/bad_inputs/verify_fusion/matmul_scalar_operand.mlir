// matmul of a tensor and a scalar (generic form).
// RUN: hostir-opt %s
fusion.func @f(%a: !fusion.tensor<f32[4, 8]>) -> !fusion.tensor<f32[4, 8]> {
  %s = arith.constant 2.0 : f32
  // EXPECT-ERROR@+1:3: (?i)tensor|operand
  %b = "fusion.matmul"(%a, %s) : (!fusion.tensor<f32[4, 8]>, f32) -> !fusion.tensor<f32[4, 8]>
  fusion.return %b : !fusion.tensor<f32[4, 8]>
}
