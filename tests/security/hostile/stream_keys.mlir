// hir.stream over 10**8 keys created 10**8 streams; a key beyond the run's streams is
// refused at its op.
// RUN: hostir-run %s
// LIMITS: 10 s, 1 GB
hir.program @main(%a: !fusion.tensor<f32[4]>) -> !fusion.tensor<f32[4]> {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %n = arith.constant 100000000 : index
  scf.for %i = %c0 to %n step %c1 {
    // EXPECT-ERROR@+1:5: 'hir.stream' op failed: stream key 4 is outside the run's 4 streams \(keys 0 to 3\)
    %w = hir.stream %i
    hir.set_current_stream %w
  }
  hir.return %a : !fusion.tensor<f32[4]>
}
