// allgather of f32[4] on a team of 2 into f32[9] (needs 8 elements).
// RUN: hostir-opt %s
hir.program @p(%x: !fusion.tensor<f32[4]>, %y: !fusion.tensor<f32[9]>) {
  // EXPECT-ERROR@+1:3: (?i)(9|8).*(elements|extent|size)|output
  %w = hir.allgather %x -> %y team [0, 1] : !fusion.tensor<f32[4]> -> !fusion.tensor<f32[9]>
  hir.wait %w
  hir.return
}
