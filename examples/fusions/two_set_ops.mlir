// nvFuser: HirLowerStreamTest.TwoSetOps.
// tv1 = set(tv0); tv2 = set(tv1); axis 0 of tv1 and tv2 is stream-parallel; input 4x8.
//
// Lowering should produce: hir.allocate tv1, hir.allocate tv2, hir.get_current_stream, the
// sync loop, and ONE main loop (both sets share the stream axis) with three alias_selects
// (tv0[i], tv1[i], tv2[i]) and two fusion.set ops on the slices. Output == input.

builtin.module {
  fusion.func @two_set_ops(%tv0: !fusion.tensor<f32[4, 8]>) -> !fusion.tensor<f32[4 stream, 8]> {
    %tv1 = fusion.set %tv0 : !fusion.tensor<f32[4, 8]> -> !fusion.tensor<f32[4 stream, 8]>
    %tv2 = fusion.set %tv1 : !fusion.tensor<f32[4 stream, 8]> -> !fusion.tensor<f32[4 stream, 8]>
    fusion.return %tv2 : !fusion.tensor<f32[4 stream, 8]>
  }
}
