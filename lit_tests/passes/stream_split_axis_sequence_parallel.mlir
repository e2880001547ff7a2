// RUN: hostir-opt %s -p 'hostir-lower{transport=nccl}' | filecheck %s
// RUN: hostir-opt %s -p 'hostir-lower' --remarks 2>&1 >/dev/null | filecheck %s --check-prefix=REMARK

// The sequence-parallel MLP block as nvFuser's overlap tests spell it: the sequence
// `[S*D*m]` split in S chunks, then over the devices (`x.outer_split(0, S)`,
// `x.outer_split(1, D)`, DIDx on that piece; Stream on the outer piece of the results).
// A chunk keeps each device's part of it (`16(2, 2 didx, 4)` -> `8(2 didx, 4)`), so one
// loop all-gathers, multiplies (gelu in the epilogue), multiplies and reduce-scatters each
// chunk.
// CHECK-LABEL: hir.program @sequence_parallel_mlp(
// CHECK:         scf.for %i_1 = %c0 to %extent step %c1 {
// CHECK:           %x_i = hir.alias_chunk %x[%i_1] axis 0 parts 2 : !fusion.tensor<f32[16(2, 2 didx, 4), 8], mesh=[0, 1]> -> !fusion.tensor<f32[8(2 didx, 4), 8], mesh=[0, 1]>
// CHECK-NEXT:      %[[G:.+]] = hir.alias_chunk %{{.+}}[%i_1] axis 0 parts 2 : !fusion.tensor<f32[16(2 stream, 8), 8], mesh=[0, 1]> -> !fusion.tensor<f32[8, 8], mesh=[0, 1]>
// CHECK-NEXT:      %w = hir.allgather %x_i -> %[[G]] team [0, 1] :
// CHECK-NEXT:      hir.wait %w
// CHECK-NEXT:      %h_i = hir.alias_chunk %h[%i_1] axis 0 parts 2
// CHECK-NEXT:      fusion.matmul %[[G]], %w1 epilogue gelu_tanh into %h_i :
// CHECK:           fusion.matmul
// CHECK:           %y_i = hir.alias_chunk %y[%i_1] axis 1 parts 2 : !fusion.tensor<f32[r2, 16(2 stream, 2 didx, 4), 8], mesh=[0, 1]> -> !fusion.tensor<f32[r2, 8(2 didx, 4), 8], mesh=[0, 1]>
// CHECK-NEXT:      %w_1 = hir.reduce_scatter %{{.+}} -> %y_i team [0, 1] op sum :
// CHECK-NEXT:      hir.wait %w_1
// CHECK:         }
// CHECK-NOT:     scf.for
// CHECK:         hir.return %y
// REMARK: remark: choose-pipelining: pipeline of 2 chunks kept as declared: devices share an axis inside its outer piece, which only the chunks' collectives lower
fusion.func @sequence_parallel_mlp(%x: !fusion.tensor<f32[16(2, 2 didx, 4), 8], mesh=[0, 1]>, %w1: !fusion.tensor<f32[8, 8(2 didx, 4)], mesh=[0, 1]>, %w2: !fusion.tensor<f32[8(2 didx, 4), 8], mesh=[0, 1]>) -> !fusion.tensor<f32[16(2 stream, 2 didx, 4), 8, r8], mesh=[0, 1]> {
  %h = fusion.matmul %x, %w1 : !fusion.tensor<f32[16(2, 2 didx, 4), 8], mesh=[0, 1]>, !fusion.tensor<f32[8, 8(2 didx, 4)], mesh=[0, 1]> -> !fusion.tensor<f32[16(2 stream, 8), 8(2 didx, 4), r8], mesh=[0, 1]>
  %g = fusion.gelu tanh %h : !fusion.tensor<f32[16(2 stream, 8), 8(2 didx, 4), r8], mesh=[0, 1]> -> !fusion.tensor<f32[16(2 stream, 8), 8(2 didx, 4)], mesh=[0, 1]>
  %y = fusion.matmul %g, %w2 : !fusion.tensor<f32[16(2 stream, 8), 8(2 didx, 4)], mesh=[0, 1]>, !fusion.tensor<f32[8(2 didx, 4), 8], mesh=[0, 1]> -> !fusion.tensor<f32[16(2 stream, 2 didx, 4), 8, r8], mesh=[0, 1]>
  fusion.return %y : !fusion.tensor<f32[16(2 stream, 2 didx, 4), 8, r8], mesh=[0, 1]>
}
