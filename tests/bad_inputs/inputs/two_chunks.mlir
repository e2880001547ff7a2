// Two chunks for --split-input-file; the second fails on line 7.
%a = hir.allocate : !fusion.tensor<f32[8]>
// -----
fusion.func @f(%a: !fusion.tensor<f32[8]>) -> !fusion.tensor<f32[8]> {
  // an error on the next line (line 7 of the file)

  %b = fusion.exp %a : !fusion.tensor<f32[8]> -> !fusion.tensor<f32[4]>
  fusion.return %a : !fusion.tensor<f32[8]>
}
