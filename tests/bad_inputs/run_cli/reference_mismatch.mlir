// A host program that disagrees with its @reference: hostir-run must fail, not print the error and exit 0.
// RUN: hostir-run %s --nproc 1
// EXPECT-ERROR: (?i)(differs|mismatch|does not match).*reference|reference
builtin.module {
  hir.program @main(%x: !fusion.tensor<f32[4]>) -> !fusion.tensor<f32[4]> {
    %o = hir.allocate : !fusion.tensor<f32[4]>
    %y = fusion.neg %x into %o : !fusion.tensor<f32[4]> -> !fusion.tensor<f32[4]>
    hir.return %y : !fusion.tensor<f32[4]>
  }
  fusion.func @reference(%x: !fusion.tensor<f32[4]>) -> !fusion.tensor<f32[4]> {
    %y = fusion.exp %x : !fusion.tensor<f32[4]> -> !fusion.tensor<f32[4]>
    fusion.return %y : !fusion.tensor<f32[4]>
  }
}
