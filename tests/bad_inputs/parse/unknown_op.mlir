// An op that no dialect defines.
// RUN: hostir-opt %s
fusion.func @f(%a: !fusion.tensor<f32[4, 8]>) -> !fusion.tensor<f32[4, 8]> {
  // EXPECT-ERROR@+1:8: fusion.frobnicate is not registered|unknown op|unregistered
  %b = fusion.frobnicate %a : !fusion.tensor<f32[4, 8]> -> !fusion.tensor<f32[4, 8]>
  fusion.return %b : !fusion.tensor<f32[4, 8]>
}
