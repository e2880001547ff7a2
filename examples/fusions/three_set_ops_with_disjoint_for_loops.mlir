// nvFuser: HirLowerStreamTest.ThreeSetOpsWithDisjointsForLoops.
// tv1 = set(tv0); tv2 = set(tv1); tv3 = set(tv2); tv1 and tv3 are stream-parallel on axis 0,
// tv2 is not (it is a whole-tensor copy between the two loops); input 4x8.
//
// Lowering should produce 9 top-level ops: hir.allocate tv1, hir.get_current_stream, sync loop,
// main loop {tv1[i] = set(tv0[i])}, tv2 = fusion.set tv1 (whole tensor), hir.allocate tv3,
// hir.get_current_stream, sync loop, main loop {tv3[i] = set(tv2[i])}. Output == input.

builtin.module {
  fusion.func @three_set_ops_with_disjoint_for_loops(%tv0: !fusion.tensor<f32[4, 8]>) -> !fusion.tensor<f32[4 stream, 8]> {
    %tv1 = fusion.set %tv0 : !fusion.tensor<f32[4, 8]> -> !fusion.tensor<f32[4 stream, 8]>
    %tv2 = fusion.set %tv1 : !fusion.tensor<f32[4 stream, 8]> -> !fusion.tensor<f32[4, 8]>
    %tv3 = fusion.set %tv2 : !fusion.tensor<f32[4, 8]> -> !fusion.tensor<f32[4 stream, 8]>
    fusion.return %tv3 : !fusion.tensor<f32[4 stream, 8]>
  }
}
