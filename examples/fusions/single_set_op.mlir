// nvFuser: HirLowerStreamTest.SingleSetOp (tests/cpp/test_host_ir_stream_lowering.cpp).
// tv1 = set(tv0); tv1's axis 0 is stream-parallel; input 4x8.
//
// Lowering (stream-parallel-type) should produce, at top level: hir.allocate of tv1 (whole
// tensor: a fusion output keeps its stream axis out of the allocation), hir.get_current_stream,
// a sync loop (each worker stream i % number_of_streams waits for the user stream), and the
// main loop: set worker stream, alias_select tv0[i] and tv1[i] on axis 0, fusion.set of the
// slices, switch back to the user stream and synchronize on the worker. Output == input.

builtin.module {
  fusion.func @single_set_op(%tv0: !fusion.tensor<f32[4, 8]>) -> !fusion.tensor<f32[4 stream, 8]> {
    %tv1 = fusion.set %tv0 : !fusion.tensor<f32[4, 8]> -> !fusion.tensor<f32[4 stream, 8]>
    fusion.return %tv1 : !fusion.tensor<f32[4 stream, 8]>
  }
}
