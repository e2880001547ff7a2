// reduce_scatter of f32[8] on a team of 2 into f32[8] (each member keeps 4).
// RUN: hostir-opt %s
hir.program @p(%x: !fusion.tensor<f32[4]>, %y: !fusion.tensor<f32[8]>) {
  // EXPECT-ERROR@+1:3: (?i)(4|elements|size|extent)
  %w = hir.reduce_scatter %y -> %y team [0, 1] op sum : !fusion.tensor<f32[8]> -> !fusion.tensor<f32[8]>
  hir.wait %w
  hir.return
}
