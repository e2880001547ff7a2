// reduce dims [1] whose result marks axis 0 as reduced.
// RUN: hostir-opt %s
fusion.func @f(%a: !fusion.tensor<f32[4, 8]>) -> !fusion.tensor<f32[r4, 8]> {
  // EXPECT-ERROR@+1:3: result axes \[r4, 8\] do not match the expected \[4, r8\]
  %b = fusion.reduce sum %a dims [1] : !fusion.tensor<f32[4, 8]> -> !fusion.tensor<f32[r4, 8]>
  fusion.return %b : !fusion.tensor<f32[r4, 8]>
}
