// A string left open before the rest of a long line: a located error at once, not minutes
// of backtracking in the lexer (xDSL 0.74's pattern takes 2^n steps for n characters).
// RUN: hostir-opt %s -p hostir-lower
// LIMITS: 10 s, 1 GB
// EXPECT-ERROR@+1:19: (?i)end of file reached before closing string literal
fusion.func @f(%a:" !fusion.tensor<f32[8, 4(2 didx, 2)], mesh=[0, 1]>, %b: !fusion.tensor<f32[4, 6], mesh=[0, 1]>) {
  fusion.return
}
