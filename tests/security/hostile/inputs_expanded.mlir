// A 1.6 KB file holding torch.zeros(1, 1).expand(2, 10**8) was materialized on every
// rank (800 MB each).
// RUN: hostir-run %s --inputs %t/x.pt
// SETUP: %t/x.pt = torch.zeros(1, 1).expand(2, 10**8)
// LIMITS: 10 s, 1 GB
// EXPECT-ERROR: ^hostir-run: error: \S+/x.pt holds a view of 800000000 bytes of elements on 4 bytes of storage \(an expanded tensor\)
hir.program @main(%x: !fusion.tensor<f32[2 didx, 100000000], mesh=[0, 1]>) -> !fusion.tensor<f32[2 didx, 100000000], mesh=[0, 1]> {
  hir.return %x : !fusion.tensor<f32[2 didx, 100000000], mesh=[0, 1]>
}
