// A value of another function (functions are isolated from above).
// RUN: hostir-opt %s
fusion.func @g(%x: !fusion.tensor<f32[4, 8]>) -> !fusion.tensor<f32[4, 8]> {
  fusion.return %x : !fusion.tensor<f32[4, 8]>
}
fusion.func @f(%a: !fusion.tensor<f32[4, 8]>) -> !fusion.tensor<f32[4, 8]> {
  // EXPECT-ERROR@+1:19: (?i)undefined|outside|isolated|%x
  %b = fusion.neg %x : !fusion.tensor<f32[4, 8]> -> !fusion.tensor<f32[4, 8]>
  fusion.return %b : !fusion.tensor<f32[4, 8]>
}
