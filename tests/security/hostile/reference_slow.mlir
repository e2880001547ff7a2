// The eager reference ran outside --timeout (a 16384**2 matmul ran past --timeout 5).
// The program returns its input at once; its reference multiplies 2048 x 2048 matrices
// 20 times: stopped at --timeout 2, inside the launch.
// RUN: hostir-run %s --timeout 2
// LIMITS: 10 s, 1 GB
// EXPECT-ERROR: ^hostir-run: error: the 1 rank\(s\) did not finish within 2 s and were stopped$
!t = !fusion.tensor<f32[2048, 2048]>
!r = !fusion.tensor<f32[2048, 2048, r2048]>
hir.program @main(%p0: !t, %b: !t) -> !t {
  hir.return %p0 : !t
}
fusion.func @reference(%p0: !t, %b: !t) -> !t {
  %p1 = fusion.matmul %p0, %b : !t, !t -> !r
  %p2 = fusion.matmul %p1, %b : !r, !t -> !r
  %p3 = fusion.matmul %p2, %b : !r, !t -> !r
  %p4 = fusion.matmul %p3, %b : !r, !t -> !r
  %p5 = fusion.matmul %p4, %b : !r, !t -> !r
  %p6 = fusion.matmul %p5, %b : !r, !t -> !r
  %p7 = fusion.matmul %p6, %b : !r, !t -> !r
  %p8 = fusion.matmul %p7, %b : !r, !t -> !r
  %p9 = fusion.matmul %p8, %b : !r, !t -> !r
  %p10 = fusion.matmul %p9, %b : !r, !t -> !r
  %p11 = fusion.matmul %p10, %b : !r, !t -> !r
  %p12 = fusion.matmul %p11, %b : !r, !t -> !r
  %p13 = fusion.matmul %p12, %b : !r, !t -> !r
  %p14 = fusion.matmul %p13, %b : !r, !t -> !r
  %p15 = fusion.matmul %p14, %b : !r, !t -> !r
  %p16 = fusion.matmul %p15, %b : !r, !t -> !r
  %p17 = fusion.matmul %p16, %b : !r, !t -> !r
  %p18 = fusion.matmul %p17, %b : !r, !t -> !r
  %p19 = fusion.matmul %p18, %b : !r, !t -> !r
  %p20 = fusion.matmul %p19, %b : !r, !t -> !r
  %out = fusion.set %p20 : !r -> !t
  fusion.return %out : !t
}
