// An op of a dialect hostir does not load.
// RUN: hostir-opt %s
fusion.func @f(%a: !fusion.tensor<f32[4, 8]>) -> !fusion.tensor<f32[4, 8]> {
  // EXPECT-ERROR@+1:8: linalg.exp is not registered|unknown|unregistered
  %b = linalg.exp %a : !fusion.tensor<f32[4, 8]> -> !fusion.tensor<f32[4, 8]>
  fusion.return %b : !fusion.tensor<f32[4, 8]>
}
