// A team entry beyond int64: a located parse error too (the same parser).
// RUN: hostir-opt %s
// LIMITS: 10 s, 1 GB
hir.program @main(%x: !fusion.tensor<f32[2 didx, 4], mesh=[0, 1]>) -> !fusion.tensor<f32[2, 4], mesh=[0, 1]> {
  %o = hir.allocate : !fusion.tensor<f32[2, 4], mesh=[0, 1]>
  // EXPECT-ERROR@+1:37: integer 18446744073709551616 does not fit in i64
  %w = hir.allgather %x -> %o team [18446744073709551616, 1] : !fusion.tensor<f32[2 didx, 4], mesh=[0, 1]> -> !fusion.tensor<f32[2, 4], mesh=[0, 1]>
  hir.wait %w
  hir.return %o : !fusion.tensor<f32[2, 4], mesh=[0, 1]>
}
