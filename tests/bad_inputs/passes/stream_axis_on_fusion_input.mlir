// A stream axis on a fusion input: the message names the input the user wrote, not a hir.program.
// RUN: hostir-opt %s -p hostir-lower
// EXPECT-ERROR@+1:1: 'fusion.func' op .*(input 0|argument 0|%a)
fusion.func @f(%a: !fusion.tensor<f32[4 stream, 8]>) -> !fusion.tensor<f32[4 stream, 8]> {
  %b = fusion.neg %a : !fusion.tensor<f32[4 stream, 8]> -> !fusion.tensor<f32[4 stream, 8]>
  fusion.return %b : !fusion.tensor<f32[4 stream, 8]>
}
