// stream-parallel-type on a fusion that lower-to-host has not turned into a program.
// RUN: hostir-opt %s -p stream-parallel-type
// EXPECT-ERROR: (?i)lower-to-host
fusion.func @f(%a: !fusion.tensor<f32[4, 8]>) -> !fusion.tensor<f32[4 stream, 8]> {
  %b = fusion.set %a : !fusion.tensor<f32[4, 8]> -> !fusion.tensor<f32[4 stream, 8]>
  fusion.return %b : !fusion.tensor<f32[4 stream, 8]>
}
