// nvFuser: HirLowerStreamTest.Matmul_N.
// c = matmul(a, b) with a 8x4, b 4x2; c's axis 1 (N) is stream-parallel, so the loop slices
// b along its axis 1 (the axis that maps to c's N axis).
//
// Lowering should produce 4 top-level ops; the main loop computes c[:, i] = a @ b[:, i].

builtin.module {
  fusion.func @matmul_n(%a: !fusion.tensor<f32[8, 4]>, %b: !fusion.tensor<f32[4, 2]>) -> !fusion.tensor<f32[8, 2 stream, r4]> {
    %c = fusion.matmul %a, %b : !fusion.tensor<f32[8, 4]>, !fusion.tensor<f32[4, 2]> -> !fusion.tensor<f32[8, 2 stream, r4]>
    fusion.return %c : !fusion.tensor<f32[8, 2 stream, r4]>
  }
}
