// Inputs of dynamic extents, sharded over 2 ranks, that the fusion's add cannot take
// together (4 and 6 rows): refused before any rank starts, at the add, not a torch
// error inside the run.
// SETUP: %t/a.pt = torch.zeros(4, 3)
// SETUP: %t/b.pt = torch.zeros(6, 3)
// RUN: hostir-run %s --nproc 2 --inputs %t/a.pt %t/b.pt
// EXPECT-ERROR: ^hostir-run: error: @f: inputs of dynamic extents \[4, 6\] do not fit the fusion: .*dynamic_extents_disagree.mlir:\d+:3: error: 'fusion.add' op .*extents 4 and 6 are not broadcast-compatible
!rows = !fusion.tensor<f32[?(2 didx, ?), 3], mesh=[0, 1]>
fusion.func @f(%a: !rows, %b: !rows) -> !rows {
  %c = fusion.add %a, %b : !rows, !rows -> !rows
  fusion.return %c : !rows
}
