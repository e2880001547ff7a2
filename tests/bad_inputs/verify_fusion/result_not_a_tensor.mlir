// A compute op whose result is a scalar.
// RUN: hostir-opt %s
fusion.func @f(%a: !fusion.tensor<f32[4, 8]>) -> !fusion.tensor<f32[4, 8]> {
  // EXPECT-ERROR@+1:3: (?i)(tensor|fusion.tensor|result)
  %b = fusion.neg %a : !fusion.tensor<f32[4, 8]> -> f32
  fusion.return %a : !fusion.tensor<f32[4, 8]>
}
