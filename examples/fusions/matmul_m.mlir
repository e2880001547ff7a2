// nvFuser: HirLowerStreamTest.Matmul_M.
// c = matmul(a, b) with a 8x4, b 4x2; c's axis 0 (M) is stream-parallel.
//
// Lowering should produce 4 top-level ops; the main loop multiplies the row a[i] (a 1-D slice)
// by the whole b into c[i]. Output allclose to a @ b (tolerance 1e-2 as in nvFuser).

builtin.module {
  fusion.func @matmul_m(%a: !fusion.tensor<f32[8, 4]>, %b: !fusion.tensor<f32[4, 2]>) -> !fusion.tensor<f32[8 stream, 2, r4]> {
    %c = fusion.matmul %a, %b : !fusion.tensor<f32[8, 4]>, !fusion.tensor<f32[4, 2]> -> !fusion.tensor<f32[8 stream, 2, r4]>
    fusion.return %c : !fusion.tensor<f32[8 stream, 2, r4]>
  }
}
