// A cast to a type with no torch dtype: refused at the type, where the parser reads it.
// RUN: hostir-opt %s
fusion.func @f(%a: !fusion.tensor<f32[4, 8]>) -> !fusion.tensor<f32[4, 8]> {
  // EXPECT-ERROR@+1:68: unsupported element type i3
  %b = fusion.cast %a : !fusion.tensor<f32[4, 8]> -> !fusion.tensor<i3[4, 8]>
  %c = fusion.cast %b : !fusion.tensor<i3[4, 8]> -> !fusion.tensor<f32[4, 8]>
  fusion.return %c : !fusion.tensor<f32[4, 8]>
}
