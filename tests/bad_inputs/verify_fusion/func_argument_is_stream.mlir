// A fusion argument of type !hir.stream: fusion functions take tensors and scalars.
// RUN: hostir-opt %s
// EXPECT-ERROR@+1:1: (?i)(argument|input).*(stream|tensor|scalar)
fusion.func @f(%a: !fusion.tensor<f32[4, 8]>, %s: !hir.stream) -> !fusion.tensor<f32[4, 8]> {
  %b = fusion.neg %a : !fusion.tensor<f32[4, 8]> -> !fusion.tensor<f32[4, 8]>
  fusion.return %b : !fusion.tensor<f32[4, 8]>
}
