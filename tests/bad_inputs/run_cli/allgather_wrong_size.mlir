// An allgather of f32[4] per rank into f32[9] on 2 ranks: refused by the verifier, located.
// RUN: hostir-run %s --nproc 2
hir.program @main(%x: !fusion.tensor<f32[4]>) -> !fusion.tensor<f32[9]> {
  %g = hir.allocate : !fusion.tensor<f32[9]>
  // EXPECT-ERROR@+1:3: (?i)(9|8).*(elements|extent|size)
  %w = hir.allgather %x -> %g team [0, 1] : !fusion.tensor<f32[4]> -> !fusion.tensor<f32[9]>
  hir.wait %w
  hir.return %g : !fusion.tensor<f32[9]>
}
