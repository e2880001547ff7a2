// A run-time index out of range: located at the op in the user's file, not in <job>.
// RUN: hostir-run %s --nproc 1
hir.program @main(%x: !fusion.tensor<f32[4, 8]>) -> !fusion.tensor<f32[8]> {
  %i = arith.constant 9 : index
  // EXPECT-ERROR@+1:3: (?i)(index 9|out of (range|bounds))
  %y = fusion.select %x[%i] dim 0 : !fusion.tensor<f32[4, 8]>, index -> !fusion.tensor<f32[8]>
  hir.return %y : !fusion.tensor<f32[8]>
}
