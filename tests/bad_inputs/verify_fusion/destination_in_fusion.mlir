// A user-written fusion with a destination (`into`): only host programs have them.
// RUN: hostir-opt %s
fusion.func @f(%a: !fusion.tensor<f32[4, 8]>) -> !fusion.tensor<f32[4, 8]> {
  %o = fusion.exp %a : !fusion.tensor<f32[4, 8]> -> !fusion.tensor<f32[4, 8]>
  // EXPECT-ERROR@+1:3: (?i)(destination|into).*(host program|hir.program|fusion)|only .*host
  %b = fusion.neg %a into %o : !fusion.tensor<f32[4, 8]> -> !fusion.tensor<f32[4, 8]>
  fusion.return %b : !fusion.tensor<f32[4, 8]>
}
