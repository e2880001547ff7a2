// A buffer used after hir.deallocate.
// RUN: hostir-opt %s
hir.program @p() {
  %o = hir.allocate : !fusion.tensor<f32[4]>
  hir.deallocate %o : !fusion.tensor<f32[4]>
  // EXPECT-ERROR@+1:3: (?i)(dealloc|freed|after)
  %r = fusion.neg %o : !fusion.tensor<f32[4]> -> !fusion.tensor<f32[4]>
  hir.return
}
