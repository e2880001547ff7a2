// send_recv whose root (the sender) is not team[0].
// RUN: hostir-opt %s
hir.program @p(%x: !fusion.tensor<f32[4]>, %y: !fusion.tensor<f32[8]>) {
  // EXPECT-ERROR@+1:3: (?i)(root|sender)
  %w = hir.send_recv %x -> %x team [0, 1] root 1 : !fusion.tensor<f32[4]> -> !fusion.tensor<f32[4]>
  hir.wait %w
  hir.return
}
