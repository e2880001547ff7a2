// A team with a negative device id.
// RUN: hostir-opt %s
hir.program @p(%x: !fusion.tensor<f32[4]>, %y: !fusion.tensor<f32[8]>) {
  // EXPECT-ERROR@+1:3: (?i)negative|-1
  %w = hir.allgather %x -> %y team [-1, 0] : !fusion.tensor<f32[4]> -> !fusion.tensor<f32[8]>
  hir.wait %w
  hir.return
}
