// A split marker line inside a function: the first chunk ends with its region open (line 5).
// RUN: hostir-opt %s --split-input-file
// EXPECT-ERROR@5:1: (?i)expected '}'|'}' expected|end of
fusion.func @f(%a: !fusion.tensor<f32[4, 8]>) -> !fusion.tensor<f32[4, 8]> {
// -----
%b = fusion.neg %a : !fusion.tensor<f32[4, 8]> -> !fusion.tensor<f32[4, 8]>
  fusion.return %b : !fusion.tensor<f32[4, 8]>
}
