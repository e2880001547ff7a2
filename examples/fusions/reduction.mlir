// nvFuser: HirLowerStreamTest.Reduction.
// tv1 = sum(tv0, {2}) with tv0 4x8x2; tv1's axis 0 (an iteration axis) is stream-parallel.
//
// Lowering should produce 4 top-level ops (allocate tv1, get_current_stream, sync loop, main
// loop); the main loop reduces each slice tv0[i] (8x2) into tv1[i]. Output == tv0.sum(2).

builtin.module {
  fusion.func @reduction(%tv0: !fusion.tensor<f32[4, 8, 2]>) -> !fusion.tensor<f32[4 stream, 8, r2]> {
    %tv1 = fusion.reduce sum %tv0 dims [2] : !fusion.tensor<f32[4, 8, 2]> -> !fusion.tensor<f32[4 stream, 8, r2]>
    fusion.return %tv1 : !fusion.tensor<f32[4 stream, 8, r2]>
  }
}
