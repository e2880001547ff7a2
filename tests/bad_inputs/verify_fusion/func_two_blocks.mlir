// A fusion.func whose region has two blocks.
// RUN: hostir-opt %s
// EXPECT-ERROR@+1:1: (?i)(single|one) block|block
fusion.func @f(%a: !fusion.tensor<f32[4, 8]>) -> !fusion.tensor<f32[4, 8]> {
  fusion.return %a : !fusion.tensor<f32[4, 8]>
^bb1:
  fusion.return %a : !fusion.tensor<f32[4, 8]>
}
