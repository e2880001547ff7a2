// A team naming device 2, outside the buffers' mesh [0, 1].
// RUN: hostir-opt %s
hir.program @p(%x: !fusion.tensor<f32[2 didx, 4], mesh=[0, 1]>, %y: !fusion.tensor<f32[2, 4], mesh=[0, 1]>) {
  // EXPECT-ERROR@+1:3: (?i)(device 2|\[0, 2\]).*(mesh|outside)|mesh
  %w = hir.allgather %x -> %y team [0, 2] : !fusion.tensor<f32[2 didx, 4], mesh=[0, 1]> -> !fusion.tensor<f32[2, 4], mesh=[0, 1]>
  hir.wait %w
  hir.return
}
