// hostir-lower applied twice: the second run finds a host program and must leave the program alone (exit 0).
// RUN: hostir-opt %s -p hostir-lower,hostir-lower
fusion.func @f(%a: !fusion.tensor<f32[4, 8]>) -> !fusion.tensor<f32[4 stream, 8]> {
  %b = fusion.set %a : !fusion.tensor<f32[4, 8]> -> !fusion.tensor<f32[4 stream, 8]>
  fusion.return %b : !fusion.tensor<f32[4 stream, 8]>
}
