// hostir-lower with lower-to-host disabled: a later pass names the missing precondition.
// RUN: hostir-opt %s -p hostir-lower --disable-pass lower-to-host
// EXPECT-ERROR: (?i)lower-to-host
fusion.func @f(%a: !fusion.tensor<f32[4, 8]>) -> !fusion.tensor<f32[4 stream, 8]> {
  %b = fusion.set %a : !fusion.tensor<f32[4, 8]> -> !fusion.tensor<f32[4 stream, 8]>
  fusion.return %b : !fusion.tensor<f32[4 stream, 8]>
}
