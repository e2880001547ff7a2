// nvFuser: MultiDeviceStreamParallelTypeTest.matmul_AR, for D = 2 devices.
// a [S, DIDx(D), M/S, K/D], b [DIDx(D), K/D, N]; u = matmul(a, b) [Stream(S), DIDx(D), M/S, N]
// (the K split is a batch axis: each rank multiplies its K/D slices); c = sum(u, {1})
// [Stream(S), r(D), M/S, N]. S = 4, M/S = 2, K/D = 4, N = 4.
//
// Lowering should produce: allocate u, allocate c, get_current_stream, sync loop, main loop
// {alias_select a[i], alias_select u[i], fusion.matmul into u[i], alias_select c[i],
// hir.allocate (no-op), hir.allreduce op sum team [0, 1], hir.wait}. Output == the unsharded
// a[:, d, :, :] @ b[d] summed over d.

builtin.module {
  fusion.func @matmul_ar(%a: !fusion.tensor<f32[4, 2 didx, 2, 4], mesh=[0, 1]>, %b: !fusion.tensor<f32[2 didx, 4, 4], mesh=[0, 1]>) -> !fusion.tensor<f32[4 stream, r2, 2, 4], mesh=[0, 1]> {
    %u = fusion.matmul %a, %b : !fusion.tensor<f32[4, 2 didx, 2, 4], mesh=[0, 1]>, !fusion.tensor<f32[2 didx, 4, 4], mesh=[0, 1]> -> !fusion.tensor<f32[4 stream, 2 didx, 2, 4, r4], mesh=[0, 1]>
    %c = fusion.reduce sum %u dims [1] : !fusion.tensor<f32[4 stream, 2 didx, 2, 4, r4], mesh=[0, 1]> -> !fusion.tensor<f32[4 stream, r2, 2, 4], mesh=[0, 1]>
    fusion.return %c : !fusion.tensor<f32[4 stream, r2, 2, 4], mesh=[0, 1]>
  }
}
