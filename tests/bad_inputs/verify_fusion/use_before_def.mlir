// A value used before the op that defines it: a dominance error, located at the use.
// RUN: hostir-opt %s
fusion.func @f(%a: !fusion.tensor<f32[4, 8]>) -> !fusion.tensor<f32[4, 8]> {
  // EXPECT-ERROR@+1:3: (?i)dominat|before (it is )?defin|use before def
  %c = fusion.exp %b : !fusion.tensor<f32[4, 8]> -> !fusion.tensor<f32[4, 8]>
  %b = fusion.neg %a : !fusion.tensor<f32[4, 8]> -> !fusion.tensor<f32[4, 8]>
  fusion.return %c : !fusion.tensor<f32[4, 8]>
}
