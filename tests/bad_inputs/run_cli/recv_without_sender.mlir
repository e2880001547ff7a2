// A recv that no rank ever sends to: the run fails once the collective timeout (3 s here) passes, naming the op.
// RUN: hostir-run %s --nproc 2 --collective-timeout 3
// TIMEOUT: 60
hir.program @main(%x: !fusion.tensor<f32[4], mesh=[0]>) -> !fusion.tensor<f32[4], mesh=[0]> {
  %p = arith.constant 1 : index
  // EXPECT-ERROR@+1:3: (?i)(never|no).*(send|sender|matching)|timed? ?out
  %w = hir.recv %x, %p : !fusion.tensor<f32[4], mesh=[0]>
  hir.wait %w
  hir.return %x : !fusion.tensor<f32[4], mesh=[0]>
}
