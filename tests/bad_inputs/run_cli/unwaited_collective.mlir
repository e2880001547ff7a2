// An allgather whose token is never waited: refused by the verifier (today: a different result, no diagnostic).
// RUN: hostir-run %s --nproc 2
hir.program @main(%x: !fusion.tensor<f32[2 didx, 8], mesh=[0, 1]>) -> !fusion.tensor<f32[2, 8], mesh=[0, 1]> {
  %g = hir.allocate : !fusion.tensor<f32[2, 8], mesh=[0, 1]>
  // EXPECT-ERROR@+1:3: (?i)(never|not) waited|hir.wait
  %w = hir.allgather %x -> %g team [0, 1] : !fusion.tensor<f32[2 didx, 8], mesh=[0, 1]> -> !fusion.tensor<f32[2, 8], mesh=[0, 1]>
  hir.return %g : !fusion.tensor<f32[2, 8], mesh=[0, 1]>
}
