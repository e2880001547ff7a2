// A fusion input allocated one stream chunk at a time (a stream axis on an input is fine:
// it is sliced chunk by chunk): the message names the input the user wrote, not a hir.program.
// RUN: hostir-opt %s -p lower-to-host
// EXPECT-ERROR@+1:1: 'fusion.func' op .*(input 0|argument 0|%a).*one stream chunk at a time
fusion.func @f(%a: !fusion.tensor<f32[4 stream, 8], alloc=[0 stream, 1]>) -> !fusion.tensor<f32[4 stream, 8]> {
  %b = fusion.neg %a : !fusion.tensor<f32[4 stream, 8], alloc=[0 stream, 1]> -> !fusion.tensor<f32[4 stream, 8]>
  fusion.return %b : !fusion.tensor<f32[4 stream, 8]>
}
