// A program with an index argument: hostir-run passes tensors only.
// RUN: hostir-run %s
// EXPECT-ERROR: argument 1 of @main is not a tensor
hir.program @main(%x: !fusion.tensor<f32[4]>, %n: index) -> !fusion.tensor<f32[4]> {
  hir.return %x : !fusion.tensor<f32[4]>
}
