// DIDx on the inner piece of a split, resharded by a set: not lowerable.
// RUN: hostir-opt %s -p hostir-lower
fusion.func @f(%a: !fusion.tensor<f32[8(4, 2 didx)], mesh=[0, 1]>) -> !fusion.tensor<f32[8], mesh=[0, 1]> {
  // EXPECT-ERROR@+1:3: (?i)inner split|not (supported|lowerable)
  %b = fusion.set %a : !fusion.tensor<f32[8(4, 2 didx)], mesh=[0, 1]> -> !fusion.tensor<f32[8], mesh=[0, 1]>
  fusion.return %b : !fusion.tensor<f32[8], mesh=[0, 1]>
}
