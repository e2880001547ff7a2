// nvFuser: MultiDeviceStreamParallelTypeTest.ReduceScatter, for D = 2 devices.
// tv0 [i0, DIDx(D), D, i4] on mesh [0, 1] (global 4xDxDx8); tv1 = sum(tv0, {1})
// [Stream(i0), r(D), DIDx(D), i4]: the reduced axis was sharded, the result is sharded on the
// next one.
//
// Lowering should produce: allocate tv1, get_current_stream, sync loop, main loop {alias_select
// tv0[i], alias_select tv1[i], hir.allocate (no-op), hir.reduce_scatter op sum team [0, 1],
// hir.wait}. Output == shard of global tv0.sum(1) along its axis 1 (nvFuser's
// shardTensor(sum(1), axis 1)).

builtin.module {
  fusion.func @reduce_scatter(%tv0: !fusion.tensor<f32[4, 2 didx, 2, 8], mesh=[0, 1]>) -> !fusion.tensor<f32[4 stream, r2, 2 didx, 8], mesh=[0, 1]> {
    %tv1 = fusion.reduce sum %tv0 dims [1] : !fusion.tensor<f32[4, 2 didx, 2, 8], mesh=[0, 1]> -> !fusion.tensor<f32[4 stream, r2, 2 didx, 8], mesh=[0, 1]>
    fusion.return %tv1 : !fusion.tensor<f32[4 stream, r2, 2 didx, 8], mesh=[0, 1]>
  }
}
