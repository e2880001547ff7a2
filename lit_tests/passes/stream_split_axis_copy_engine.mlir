// RUN: hostir-opt %s -p 'hostir-lower{transport=nccl}' | filecheck %s
// RUN: hostir-opt %s -p 'hostir-lower{transport=copy-engine}' | filecheck %s --check-prefix=CE

// nvFuser's row-parallel overlap (stream_split_axis.mlir) with static extents: on the copy
// engines each iteration all-reduces its block into its own slice of a symmetric output.
// CHECK-LABEL: hir.program @row_parallel_static(
// CHECK:         hir.alias_chunk %x[%i_1] axis 0 parts 3 : !fusion.tensor<bf16[12(3 stream, 4), 8(2 didx, 4)], mesh=[0, 1]> -> !fusion.tensor<bf16[4, 8(2 didx, 4)], mesh=[0, 1]>
// The members push their reduced blocks into each other's (symmetric) outputs, and the
// own block's linear is computed by the all-reduce onto the peer's (`own`), which the peer
// pushed into the output too: on a team of two no `via` buffer.
// CE-LABEL:    hir.program @row_parallel_static(
// CE:            %y = hir.allocate symmetric : !fusion.tensor<bf16[r2, 12(3 stream, 4), 2], mesh=[0, 1]>
// CE:            scf.for %i_1 = %c0 to %extent step %c1 {
// CE:              %y_i = hir.alias_chunk %y[%i_1] axis 1 parts 3 : !fusion.tensor<bf16[r2, 12(3 stream, 4), 2], mesh=[0, 1]> -> !fusion.tensor<bf16[r2, 4, 2], mesh=[0, 1]>
// CE-NOT:          %via
// CE:              %w_1 = hir.allreduce %{{.+}} -> %y_i own(%{{.+}}, %{{.+}} : {{.*}}) team [0, 1] op sum transport copy_engine :
fusion.func @row_parallel_static(%x: !fusion.tensor<bf16[12(3 stream, 4), 8(2 didx, 4)], mesh=[0, 1]>, %w: !fusion.tensor<bf16[2, 8(2 didx, 4)], mesh=[0, 1]>) -> !fusion.tensor<bf16[12(3 stream, 4), 2, r8], mesh=[0, 1]> {
  %y = fusion.linear %x, %w : !fusion.tensor<bf16[12(3 stream, 4), 8(2 didx, 4)], mesh=[0, 1]>, !fusion.tensor<bf16[2, 8(2 didx, 4)], mesh=[0, 1]> -> !fusion.tensor<bf16[12(3 stream, 4), 2, r8], mesh=[0, 1]>
  fusion.return %y : !fusion.tensor<bf16[12(3 stream, 4), 2, r8], mesh=[0, 1]>
}
