// The function's region is never closed: 'expected }' at the end of the file.
// RUN: hostir-opt %s
// EXPECT-ERROR@7:1: (?i)expected '}'|'}' expected|unterminated|end of file
fusion.func @f(%a: !fusion.tensor<f32[4, 8]>) -> !fusion.tensor<f32[4, 8]> {
  %b = fusion.neg %a : !fusion.tensor<f32[4, 8]> -> !fusion.tensor<f32[4, 8]>
  fusion.return %b : !fusion.tensor<f32[4, 8]>
