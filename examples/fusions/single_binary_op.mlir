// nvFuser: HirLowerStreamTest.SingleBinaryOp.
// tv2 = add(tv0, tv1); tv2's axis 0 is stream-parallel; inputs 4x4.
//
// Lowering should produce: hir.allocate tv2, hir.get_current_stream, sync loop, main loop
// {alias_select tv0[i], tv1[i], tv2[i]; fusion.add of the slices into tv2[i]}. Output == tv0 + tv1.

builtin.module {
  fusion.func @single_binary_op(%tv0: !fusion.tensor<f32[4, 4]>, %tv1: !fusion.tensor<f32[4, 4]>) -> !fusion.tensor<f32[4 stream, 4]> {
    %tv2 = fusion.add %tv0, %tv1 : !fusion.tensor<f32[4, 4]>, !fusion.tensor<f32[4, 4]> -> !fusion.tensor<f32[4 stream, 4]>
    fusion.return %tv2 : !fusion.tensor<f32[4 stream, 4]>
  }
}
