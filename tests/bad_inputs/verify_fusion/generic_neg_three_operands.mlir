// A unary op given three operands (input, destination and one more; generic form).
// RUN: hostir-opt %s
fusion.func @f(%a: !fusion.tensor<f32[4, 8]>) -> !fusion.tensor<f32[4, 8]> {
  // EXPECT-ERROR@+1:3: (?i)operand|expected
  %b = "fusion.neg"(%a, %a, %a) : (!fusion.tensor<f32[4, 8]>, !fusion.tensor<f32[4, 8]>, !fusion.tensor<f32[4, 8]>) -> !fusion.tensor<f32[4, 8]>
  fusion.return %b : !fusion.tensor<f32[4, 8]>
}
