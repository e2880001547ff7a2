// A dynamic shape and no --inputs.
// RUN: hostir-run %s
// EXPECT-ERROR: dynamic shape .* pass --inputs
fusion.func @f(%x: !fusion.tensor<f32[?, 4]>) -> !fusion.tensor<f32[?, 4]> {
  fusion.return %x : !fusion.tensor<f32[?, 4]>
}
