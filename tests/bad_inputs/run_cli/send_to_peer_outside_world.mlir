// hir.send to rank 5 in a world of 2: located at the op in the user's file.
// RUN: hostir-run %s --nproc 2
hir.program @main(%x: !fusion.tensor<f32[4]>) -> !fusion.tensor<f32[4]> {
  %p = arith.constant 5 : index
  // EXPECT-ERROR@+1:3: (?i)(5|peer|rank).*(outside|out of range|world)
  %w = hir.send %x, %p : !fusion.tensor<f32[4]>
  hir.wait %w
  hir.return %x : !fusion.tensor<f32[4]>
}
