// hir.wait on a token before the collective that defines it.
// RUN: hostir-opt %s
hir.program @p(%x: !fusion.tensor<f32[4]>, %y: !fusion.tensor<f32[8]>) {
  // EXPECT-ERROR@+1:3: (?i)dominat|before|undefined
  hir.wait %w
  %w = hir.allgather %x -> %y team [0, 1] : !fusion.tensor<f32[4]> -> !fusion.tensor<f32[8]>
  hir.return
}
