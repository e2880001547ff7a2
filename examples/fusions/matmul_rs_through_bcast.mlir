// nvFuser: MultiDeviceStreamParallelTypeTest.matmul_RS_through_bcast, for D = 2 devices.
// a [S, DIDx(D), D, M/(S*D), K/D], b [DIDx(D), K/D, N];
// bb = broadcast(b, {true, false, true, false, false}) [1, DIDx(D), 1, K/D, N];
// u = matmul(a, bb) [Stream(S), DIDx(D), D, M/(S*D), N]; c = sum(u, {1})
// [Stream(S), r(D), DIDx(D), M/(S*D), N]. Sizes as nvFuser: M = 32, K = 8, N = 2, S = 4.
//
// Lowering should produce: hir.post_on_stream of a unit holding the broadcast first (it is not
// stream-parallel), allocate u, allocate c, get_current_stream, sync loop, main loop
// {alias_select a[i], alias_select bb on its broadcast axis 0 (run-time index 0), alias_select
// u[i], fusion.matmul, alias_select c[i], hir.allocate (no-op), hir.reduce_scatter op sum
// team [0, 1], hir.wait}. Output == shard of the unsharded sum over d along axis 1.

builtin.module {
  fusion.func @matmul_rs_through_bcast(%a: !fusion.tensor<f32[4, 2 didx, 2, 4, 4], mesh=[0, 1]>, %b: !fusion.tensor<f32[2 didx, 4, 2], mesh=[0, 1]>) -> !fusion.tensor<f32[4 stream, r2, 2 didx, 4, 2], mesh=[0, 1]> {
    %bb = fusion.broadcast %b dims [0, 2] : !fusion.tensor<f32[2 didx, 4, 2], mesh=[0, 1]> -> !fusion.tensor<f32[b1, 2 didx, b1, 4, 2], mesh=[0, 1]>
    %u = fusion.matmul %a, %bb : !fusion.tensor<f32[4, 2 didx, 2, 4, 4], mesh=[0, 1]>, !fusion.tensor<f32[b1, 2 didx, b1, 4, 2], mesh=[0, 1]> -> !fusion.tensor<f32[4 stream, 2 didx, 2, 4, 2, r4], mesh=[0, 1]>
    %c = fusion.reduce sum %u dims [1] : !fusion.tensor<f32[4 stream, 2 didx, 2, 4, 2, r4], mesh=[0, 1]> -> !fusion.tensor<f32[4 stream, r2, 2 didx, 4, 2], mesh=[0, 1]>
    fusion.return %c : !fusion.tensor<f32[4 stream, r2, 2 didx, 4, 2], mesh=[0, 1]>
  }
}
