// allgather with the same buffer as input and output.
// RUN: hostir-opt %s
hir.program @p(%x: !fusion.tensor<f32[4]>, %y: !fusion.tensor<f32[8]>) {
  // EXPECT-ERROR@+1:3: (?i)(8|elements|size|alias|same buffer)
  %w = hir.allgather %x -> %x team [0, 1] : !fusion.tensor<f32[4]> -> !fusion.tensor<f32[4]>
  hir.wait %w
  hir.return
}
