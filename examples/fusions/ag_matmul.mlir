// nvFuser: AGMatmulTest/AG_before_Matmul (MultiDeviceStreamParallelTypeTest), for D = 2 devices.
// a [S, DIDx(D), M/(S*D), K], b [K, N] (replicated), c = matmul(a, b) [Stream(S), D, M/(S*D), N]
// with S = 4, M/(S*D) = 2, K = 8, N = 4 (nvFuser uses M = K = 32768, N = 1024, S = 8).
//
// Lowering: decompose-reshardings inserts t3 = set(a) [Stream(S), D, M/(S*D), K] (it inherits
// c's stream axis); top level: allocate t3, allocate c, get_current_stream, sync loop, main loop
// {alias_select a[i], alias_select t3[i], hir.allocate (no-op), hir.allgather team [0, 1],
// hir.wait, alias_select c[i], fusion.matmul t3[i], b into c[i]}. Output == a @ b unsharded.

builtin.module {
  fusion.func @ag_matmul(%a: !fusion.tensor<f32[4, 2 didx, 2, 8], mesh=[0, 1]>, %b: !fusion.tensor<f32[8, 4], mesh=[0, 1]>) -> !fusion.tensor<f32[4 stream, 2, 2, 4, r8], mesh=[0, 1]> {
    %c = fusion.matmul %a, %b : !fusion.tensor<f32[4, 2 didx, 2, 8], mesh=[0, 1]>, !fusion.tensor<f32[8, 4], mesh=[0, 1]> -> !fusion.tensor<f32[4 stream, 2, 2, 4, r8], mesh=[0, 1]>
    fusion.return %c : !fusion.tensor<f32[4 stream, 2, 2, 4, r8], mesh=[0, 1]>
  }
}
