// nvFuser: MultiDeviceStreamParallelTypeTest.Allreduce, for D = 2 devices.
// tv0 [i0, DIDx(D), i3] on mesh [0, 1] (global 4xDx8); tv1 = sum(tv0, {1}) [Stream(i0), r(D), i3].
// Summing the sharded axis is a resharding reduction.
//
// Lowering should produce: allocate tv1, get_current_stream, sync loop, main loop {alias_select
// tv0[i], alias_select tv1[i], hir.allocate (no-op), hir.allreduce op sum team [0, 1],
// hir.wait}. Output == global tv0.sum(1) on every rank.

builtin.module {
  fusion.func @allreduce(%tv0: !fusion.tensor<f32[4, 2 didx, 8], mesh=[0, 1]>) -> !fusion.tensor<f32[4 stream, r2, 8], mesh=[0, 1]> {
    %tv1 = fusion.reduce sum %tv0 dims [1] : !fusion.tensor<f32[4, 2 didx, 8], mesh=[0, 1]> -> !fusion.tensor<f32[4 stream, r2, 8], mesh=[0, 1]>
    fusion.return %tv1 : !fusion.tensor<f32[4 stream, r2, 8], mesh=[0, 1]>
  }
}
