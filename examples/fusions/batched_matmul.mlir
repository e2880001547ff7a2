// nvFuser: HirLowerStreamTest.BatchedMatmul.
// c = matmul(a, b) with a 16x8x4, b 4x2; c's axis 0 (the batch axis) is stream-parallel.
//
// Lowering should produce 4 top-level ops; the main loop computes c[i] = a[i] @ b.

builtin.module {
  fusion.func @batched_matmul(%a: !fusion.tensor<f32[16, 8, 4]>, %b: !fusion.tensor<f32[4, 2]>) -> !fusion.tensor<f32[16 stream, 8, 2, r4]> {
    %c = fusion.matmul %a, %b : !fusion.tensor<f32[16, 8, 4]>, !fusion.tensor<f32[4, 2]> -> !fusion.tensor<f32[16 stream, 8, 2, r4]>
    fusion.return %c : !fusion.tensor<f32[16 stream, 8, 2, r4]>
  }
}
