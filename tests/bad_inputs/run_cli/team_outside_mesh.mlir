// An allgather over team [0, 1] of buffers that live on device 0 only: refused by the verifier, located.
// RUN: hostir-run %s --nproc 2
hir.program @main(%x: !fusion.tensor<f32[4], mesh=[0]>) -> !fusion.tensor<f32[8], mesh=[0]> {
  %g = hir.allocate : !fusion.tensor<f32[8], mesh=[0]>
  // EXPECT-ERROR@+1:3: (?i)(device 1|team \[0, 1\]).*mesh|mesh \[0\]
  %w = hir.allgather %x -> %g team [0, 1] : !fusion.tensor<f32[4], mesh=[0]> -> !fusion.tensor<f32[8], mesh=[0]>
  hir.wait %w
  hir.return %g : !fusion.tensor<f32[8], mesh=[0]>
}
