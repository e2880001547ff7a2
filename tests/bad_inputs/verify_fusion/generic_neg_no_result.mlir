// A compute op without its result (generic form).
// RUN: hostir-opt %s
fusion.func @f(%a: !fusion.tensor<f32[4, 8]>) -> !fusion.tensor<f32[4, 8]> {
  // EXPECT-ERROR@+1:3: (?i)result
  "fusion.neg"(%a) : (!fusion.tensor<f32[4, 8]>) -> ()
  fusion.return %a : !fusion.tensor<f32[4, 8]>
}
