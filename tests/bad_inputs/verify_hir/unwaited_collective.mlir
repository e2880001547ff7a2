// A collective whose work token is never waited: its output may be read before it lands.
// RUN: hostir-opt %s
hir.program @p(%x: !fusion.tensor<f32[4]>, %y: !fusion.tensor<f32[8]>) {
  // EXPECT-ERROR@+1:3: (?i)(never|not) waited|hir.wait
  %w = hir.allgather %x -> %y team [0, 1] : !fusion.tensor<f32[4]> -> !fusion.tensor<f32[8]>
  hir.return
}
