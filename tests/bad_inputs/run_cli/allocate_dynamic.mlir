// hir.allocate of a dynamic extent with nothing bound: refused at the op in the user's file.
// RUN: hostir-run %s --nproc 1
hir.program @main() -> !fusion.tensor<f32[?, 4]> {
  // EXPECT-ERROR@+1:3: (?i)dynamic
  %o = hir.allocate : !fusion.tensor<f32[?, 4]>
  hir.return %o : !fusion.tensor<f32[?, 4]>
}
