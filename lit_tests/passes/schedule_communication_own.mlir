// RUN: hostir-opt %s -p schedule-communication | filecheck %s

// An all-reduce's `own` matmul operands are read, not written, from its post to its wait:
// its post moves before an earlier GEMM that also reads the weight %b (had they counted as
// written, the post would have stayed behind every reader of %b).
!a = !fusion.tensor<f32[4, 2], mesh=[0, 1]>
!b = !fusion.tensor<f32[2, 3], mesh=[0, 1]>
!u = !fusion.tensor<f32[8, 3], mesh=[0, 1]>
!d = !fusion.tensor<f32[4, 3, r2], mesh=[0, 1]>
!v = !fusion.tensor<f32[2, 8, 3], mesh=[0, 1]>
hir.program @own_operands_are_read(%a: !a, %b: !b, %u: !u, %y: !a) -> (!u, !d) {
  %c = hir.allocate : !u
  %via = hir.allocate symmetric : !v
  %d = hir.allocate : !d
  %r = fusion.matmul %y, %b into %d : !a, !b -> !d
  %w = hir.allreduce %u -> %c via %via own(%a, %b : !a, !b) team [0, 1] op sum transport copy_engine : !u -> !u, !v
  hir.wait %w
  hir.deallocate %via : !v
  hir.return %c, %d : !u, !d
}
// CHECK-LABEL: hir.program @own_operands_are_read
// CHECK:         %w = hir.allreduce %u -> %c via %via own(%a, %b
// CHECK:         fusion.matmul %y, %b into %d
// CHECK:         hir.wait %w
