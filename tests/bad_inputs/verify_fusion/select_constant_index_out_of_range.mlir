// select a constant index 9 of an axis of extent 4.
// RUN: hostir-opt %s
fusion.func @f(%a: !fusion.tensor<f32[4, 8]>) -> !fusion.tensor<f32[8]> {
  %i = arith.constant 9 : index
  // EXPECT-ERROR@+1:3: (?i)index 9 .*out of (range|bounds)|out of (range|bounds)
  %b = fusion.select %a[%i] dim 0 : !fusion.tensor<f32[4, 8]>, index -> !fusion.tensor<f32[8]>
  fusion.return %b : !fusion.tensor<f32[8]>
}
