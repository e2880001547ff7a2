// One device id of 2**63 - 2 asks verify-collective-order (in hostir-opt's default
// pipeline) to replay 2**63 - 1 ranks: refused at the program (it ran out of memory).
// RUN: hostir-opt %s -p verify-collective-order
// LIMITS: 10 s, 1 GB
// EXPECT-ERROR@+1:1: 'hir.program' op a world of 9223372036854775807 ranks \(mesh \[0, 9223372036854775806\]\) is more than the 1048576 ranks verify-collective-order replays
hir.program @main(%x: !fusion.tensor<f32[2 didx, 4], mesh=[0, 9223372036854775806]>) -> !fusion.tensor<f32[2, 4], mesh=[0, 9223372036854775806]> {
  %o = hir.allocate : !fusion.tensor<f32[2, 4], mesh=[0, 9223372036854775806]>
  %w = hir.allgather %x -> %o team [0, 9223372036854775806] : !fusion.tensor<f32[2 didx, 4], mesh=[0, 9223372036854775806]> -> !fusion.tensor<f32[2, 4], mesh=[0, 9223372036854775806]>
  hir.wait %w
  hir.return %o : !fusion.tensor<f32[2, 4], mesh=[0, 9223372036854775806]>
}
