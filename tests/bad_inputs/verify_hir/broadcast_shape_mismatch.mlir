// broadcast from f32[4] into f32[8].
// RUN: hostir-opt %s
hir.program @p(%x: !fusion.tensor<f32[4]>, %y: !fusion.tensor<f32[8]>) {
  // EXPECT-ERROR@+1:3: (?i)(shape|size|extent|elements)
  %w = hir.broadcast %x -> %y team [0, 1] root 0 : !fusion.tensor<f32[4]> -> !fusion.tensor<f32[8]>
  hir.wait %w
  hir.return
}
