// An allgather from a column-major buffer: valid, reorder-sharded-axis lays the buffers
// out as the collective needs them.
// RUN: hostir-opt %s -p hostir-lower
fusion.func @f(%a: !fusion.tensor<f32[2 didx, 4], mesh=[0, 1], alloc=[1, 0]>) -> !fusion.tensor<f32[2, 4], mesh=[0, 1]> {
  %b = fusion.set %a : !fusion.tensor<f32[2 didx, 4], mesh=[0, 1], alloc=[1, 0]> -> !fusion.tensor<f32[2, 4], mesh=[0, 1]>
  fusion.return %b : !fusion.tensor<f32[2, 4], mesh=[0, 1]>
}
