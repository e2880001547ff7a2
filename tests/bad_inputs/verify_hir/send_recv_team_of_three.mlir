// send_recv over a team of 3: it pairs [sender, receiver].
// RUN: hostir-opt %s
hir.program @p(%x: !fusion.tensor<f32[4]>, %y: !fusion.tensor<f32[8]>) {
  // EXPECT-ERROR@+1:3: (?i)(2|two) (members|devices)|\[sender, receiver\]|pair
  %w = hir.send_recv %x -> %x team [0, 1, 2] root 0 : !fusion.tensor<f32[4]> -> !fusion.tensor<f32[4]>
  hir.wait %w
  hir.return
}
