// A hir op (hir.allocate) inside a fusion.func: fusions hold compute ops only.
// RUN: hostir-opt %s
fusion.func @f(%a: !fusion.tensor<f32[4, 8]>) -> !fusion.tensor<f32[4, 8]> {
  // EXPECT-ERROR@+1:3: (?i)(fusion|hir\.program|host program|not allowed|parent)
  %o = hir.allocate : !fusion.tensor<f32[4, 8]>
  %b = fusion.neg %a : !fusion.tensor<f32[4, 8]> -> !fusion.tensor<f32[4, 8]>
  fusion.return %b : !fusion.tensor<f32[4, 8]>
}
