// The same SSA name defined twice: located at the second definition.
// RUN: hostir-opt %s
fusion.func @f(%a: !fusion.tensor<f32[4, 8]>) -> !fusion.tensor<f32[4, 8]> {
  %b = fusion.neg %a : !fusion.tensor<f32[4, 8]> -> !fusion.tensor<f32[4, 8]>
  // EXPECT-ERROR@+1:3: (?i)redefin|already defined|%b
  %b = fusion.exp %a : !fusion.tensor<f32[4, 8]> -> !fusion.tensor<f32[4, 8]>
  fusion.return %b : !fusion.tensor<f32[4, 8]>
}
