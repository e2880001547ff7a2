// A verifier error on line 4: inputs for CLI cases that must fail without touching files.
fusion.func @f(%a: !fusion.tensor<f32[8]>) -> !fusion.tensor<f32[8]> {
  %b = fusion.exp %a : !fusion.tensor<f32[8]> -> !fusion.tensor<f32[4]>
  fusion.return %a : !fusion.tensor<f32[8]>
}
