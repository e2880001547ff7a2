// allgather of f32[4] into f32[8] on a team of 3 (needs 12).
// RUN: hostir-opt %s
hir.program @p(%x: !fusion.tensor<f32[4]>, %y: !fusion.tensor<f32[8]>) {
  // EXPECT-ERROR@+1:3: (?i)(12|team of 3|3 members|elements|size)
  %w = hir.allgather %x -> %y team [0, 1, 2] : !fusion.tensor<f32[4]> -> !fusion.tensor<f32[8]>
  hir.wait %w
  hir.return
}
