// select dim beyond the rank (a huge value).
// RUN: hostir-opt %s
fusion.func @f(%a: !fusion.tensor<f32[4, 8]>) -> !fusion.tensor<f32[4]> {
  %i = arith.constant 0 : index
  // EXPECT-ERROR@+1:3: select dim 1099511627776 is out of range for rank 2
  %b = fusion.select %a[%i] dim 1099511627776 : !fusion.tensor<f32[4, 8]>, index -> !fusion.tensor<f32[4]>
  fusion.return %b : !fusion.tensor<f32[4]>
}
