// post_on_stream of a nested symbol reference.
// RUN: hostir-opt %s
fusion.func @u(%a: !fusion.tensor<f32[4]>) -> !fusion.tensor<f32[4]> {
  fusion.return %a : !fusion.tensor<f32[4]>
}
hir.program @p(%x: !fusion.tensor<f32[4]>) {
  // EXPECT-ERROR@+1:3: (?i)(@u::@v|nested|symbol|not a fusion.func)
  %r = hir.post_on_stream @u::@v(%x) : (!fusion.tensor<f32[4]>) -> !fusion.tensor<f32[4]>
  hir.return
}
