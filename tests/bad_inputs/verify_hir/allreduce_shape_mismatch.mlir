// allreduce whose output has another shape than its input.
// RUN: hostir-opt %s
hir.program @p(%x: !fusion.tensor<f32[4]>, %y: !fusion.tensor<f32[8]>) {
  // EXPECT-ERROR@+1:3: (?i)(shape|size|extent|elements)
  %w = hir.allreduce %x -> %y team [0, 1] op sum : !fusion.tensor<f32[4]> -> !fusion.tensor<f32[8]>
  hir.wait %w
  hir.return
}
