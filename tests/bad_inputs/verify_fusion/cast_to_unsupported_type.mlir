// A cast to a type with no torch dtype.
// RUN: hostir-opt %s
fusion.func @f(%a: !fusion.tensor<f32[4, 8]>) -> !fusion.tensor<i3[4, 8]> {
  // EXPECT-ERROR@+1:3: unsupported element type i3
  %b = fusion.cast %a : !fusion.tensor<f32[4, 8]> -> !fusion.tensor<i3[4, 8]>
  fusion.return %b : !fusion.tensor<i3[4, 8]>
}
