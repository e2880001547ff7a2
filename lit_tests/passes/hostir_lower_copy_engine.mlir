// RUN: hostir-opt %s --split-input-file -p 'hostir-lower{transport=copy-engine symmetric-allreduce-output=false reduce-in-producer=false}' | filecheck %s
// RUN: hostir-opt %s --split-input-file -p 'hostir-lower{transport=copy-engine}' | filecheck %s --check-prefix=SYM
// RUN: hostir-opt %s --split-input-file -p 'hostir-lower{transport=copy-engine reduce-scatter-in-producer=true}' | filecheck %s --check-prefix=RSP

// The stream pipelines on the copy engines, lowered whole (docs/copy_engine.md): what each
// iteration of the loop computes, posts and waits for, in order.

// matmul+AR with each chunk's rows as 2 blocks, one reduced by each member: the peer's
// block, the post (phase 1 sends it), the own block while it travels, then the wait
// (phase 2 on its own communication stream: reduce, push; then the peer's reduced block).
// Shown with both all-reduce options off; the default (SYM) follows.
!a = !fusion.tensor<f32[2, 2 didx, 2, 2, 4], mesh=[0, 1]>
!b = !fusion.tensor<f32[2 didx, 4, 3], mesh=[0, 1]>
!bb = !fusion.tensor<f32[b1, 2 didx, b1, 4, 3], mesh=[0, 1]>
!u = !fusion.tensor<f32[2 stream, 2 didx, 2, 2, 3, r4], mesh=[0, 1]>
!c = !fusion.tensor<f32[2 stream, r2, 2, 2, 3], mesh=[0, 1]>
fusion.func @matmul_ar(%a: !a, %b: !b) -> !c {
  %bb = fusion.broadcast %b dims [0, 2] : !b -> !bb
  %u = fusion.matmul %a, %bb : !a, !bb -> !u
  %c = fusion.reduce sum %u dims [1] : !u -> !c
  fusion.return %c : !c
}
// CHECK-LABEL: hir.program @matmul_ar(
// CHECK-NEXT:    %me = hir.team_position team [0, 1]
// CHECK:         %via = hir.allocate symmetric : !fusion.tensor<f32[2, 2, 2 didx, 2, 2, 3], mesh=[0, 1]>
// By default (symmetric-allreduce-output) the output is symmetric (the peers push their
// reduced blocks into it); the own block is not computed before the post: the all-reduce
// computes it onto the peer's block (reduce-in-producer: `own`), which the peer pushes
// into the output too, so on a team of two there is no via buffer. A loop of two chunks
// keeps its order; from three on it is skewed (order-chunk-compute;
// hostir_lower_defaults.mlir shows one of four).
// SYM-LABEL: hir.program @matmul_ar(
// SYM:         %c = hir.allocate symmetric : !fusion.tensor<f32[2 stream, r2, 2, 2, 3], mesh=[0, 1]>
// SYM-NOT:     %via
// SYM:             fusion.matmul %a_i_p, %bb_i_p into %u_i_p
// SYM-NEXT:      }
// SYM-NOT:       fusion.matmul
// SYM:           %w = hir.allreduce %u_i -> %c_i own(%a_i_me, %bb_i_me : {{.*}}) team [0, 1] op sum transport copy_engine
// SYM-NOT:       fusion.matmul
// SYM-NOT:       iter_args
// SYM:         hir.return %c
// CHECK-NEXT:    scf.for
// CHECK:           hir.synchronize %user_stream
// CHECK-NEXT:    }
// CHECK-NEXT:    scf.for %[[I:.*]] = %c0 to %extent step %c1 {
// CHECK:           hir.set_current_stream %[[WORKER:.*]]
// CHECK-NEXT:      hir.synchronize %user_stream
// CHECK-NEXT:      %a_i = hir.alias_select %a[%[[I]]] axis 0
// CHECK-NEXT:      %bb_i = hir.alias_select %bb[%[[I]]] axis 0
// CHECK-NEXT:      %u_i = hir.alias_select %u[%[[I]]] axis 0
// CHECK-NEXT:      %s0 = arith.constant 1 : index
// CHECK-NEXT:      %team = arith.constant 2 : index
// CHECK-NEXT:      %{{.*}} = arith.constant 1 : index
// CHECK-NEXT:      scf.for %s = %s0 to %team step %{{.*}} {
// CHECK-NEXT:        %[[T:.*]] = arith.addi %me, %s : index
// CHECK-NEXT:        %p = arith.remui %[[T]], %team : index
// CHECK-NEXT:        %a_i_p = hir.alias_select %a_i[%p] axis 1
// CHECK-NEXT:        %bb_i_p = hir.alias_select %bb_i[%p] axis 1
// CHECK-NEXT:        %u_i_p = hir.alias_select %u_i[%p] axis 1
// CHECK-NEXT:        fusion.matmul %a_i_p, %bb_i_p into %u_i_p
// CHECK-NEXT:      }
// CHECK-NEXT:      %c_i = hir.alias_select %c[%[[I]]] axis 0
// CHECK-NEXT:      %via_i = hir.alias_select %via[%[[I]]] axis 0
// CHECK-NEXT:      %w = hir.allreduce %u_i -> %c_i via %via_i team [0, 1] op sum transport copy_engine
// CHECK-NEXT:      %[[A:.*]] = hir.alias_select %a_i[%me] axis 1
// CHECK-NEXT:      %[[B:.*]] = hir.alias_select %bb_i[%me] axis 1
// CHECK-NEXT:      %[[U:.*]] = hir.alias_select %u_i[%me] axis 1
// CHECK-NEXT:      fusion.matmul %[[A]], %[[B]] into %[[U]]
// CHECK-NEXT:      hir.set_current_stream %user_stream
// CHECK-NEXT:      hir.synchronize %[[WORKER]]
// CHECK-NEXT:      hir.set_current_stream %[[WORKER]]
// CHECK-NEXT:      hir.wait %w
// CHECK-NEXT:      hir.set_current_stream %user_stream
// CHECK-NEXT:    }
// CHECK-NEXT:    scf.for
// CHECK:           hir.synchronize
// CHECK-NEXT:    }
// CHECK:         hir.deallocate %via

// -----

// AG+matmul: the own part read from the input in place (the all-gather is peers_only:
// no copy fills the own slot), the peer's part once it has arrived, then the whole wait
// (this rank's own push, which reads %a_i).
!a = !fusion.tensor<f32[2, 2 didx, 2, 8], mesh=[0, 1]>
!b = !fusion.tensor<f32[8, 3], mesh=[0, 1]>
!c = !fusion.tensor<f32[2 stream, 2, 2, 3, r8], mesh=[0, 1]>
fusion.func @ag_matmul(%a: !a, %b: !b) -> !c {
  %c = fusion.matmul %a, %b : !a, !b -> !c
  fusion.return %c : !c
}
// CHECK-LABEL: hir.program @ag_matmul(
// CHECK-NEXT:    %me = hir.team_position team [0, 1]
// CHECK:         %[[G:.*]] = hir.allocate symmetric : !fusion.tensor<f32[2 stream, 2, 2, 8], mesh=[0, 1]>
// CHECK:           hir.synchronize %user_stream
// CHECK-NEXT:    }
// CHECK-NEXT:    scf.for %[[I:.*]] = %c0 to %extent step %c1 {
// CHECK:           hir.set_current_stream %[[WORKER:.*]]
// CHECK-NEXT:      %a_i = hir.alias_select %a[%[[I]]] axis 0
// CHECK-NEXT:      %[[GI:.*]] = hir.alias_select %[[G]][%[[I]]] axis 0
// CHECK-NEXT:      %w = hir.allgather %a_i -> %[[GI]] team [0, 1] transport copy_engine peers_only
// CHECK-NEXT:      %c_i = hir.alias_select %c[%[[I]]] axis 0
// CHECK-NEXT:      %[[OWN:.*]] = hir.alias_select %a_i[%me] axis 0 : !fusion.tensor<f32[2 didx, 2, 8], mesh=[0, 1]> -> !fusion.tensor<f32[2, 8], mesh=[0, 1]>
// CHECK-NEXT:      %[[OUT:.*]] = hir.alias_select %c_i[%me] axis 0
// CHECK-NEXT:      fusion.matmul %[[OWN]], %b into %[[OUT]]
// CHECK:           scf.for %s = %s0 to %team step %{{.*}} {
// CHECK:             hir.wait %w from %p
// CHECK-NEXT:        %[[PART:.*]] = hir.alias_select %[[GI]][%p] axis 0
// CHECK-NEXT:        %[[PART_OUT:.*]] = hir.alias_select %c_i[%p] axis 0
// CHECK-NEXT:        fusion.matmul %[[PART]], %b into %[[PART_OUT]]
// CHECK-NEXT:      }
// CHECK-NEXT:      hir.wait %w
// CHECK-NEXT:      hir.set_current_stream %user_stream
// CHECK-NEXT:      hir.synchronize %[[WORKER]]
// CHECK-NEXT:    }
// CHECK-NEXT:    hir.deallocate %[[G]]

// -----

// matmul+RS: the peer's block first, the post, the own block while the peer's travels,
// then the wait, which adds the two (the peer's in `via`): with both all-reduce options
// off (CHECK) and by default (SYM). With `reduce-scatter-in-producer` (RSP, off by default)
// the reduce-scatter computes the own block itself when it is waited, onto the peer's
// block, which the peer pushed into the output, made symmetric for it: on a team of two
// no `via`; the wait follows the hand-over of the chunk's compute (order-chunk-compute: the
// next chunk's GEMMs start after this one's, while its pushes travel; two chunks, too few
// to skew).
!a = !fusion.tensor<f32[2, 2 didx, 2, 2, 4], mesh=[0, 1]>
!b = !fusion.tensor<f32[2 didx, 4, 3], mesh=[0, 1]>
!bb = !fusion.tensor<f32[b1, 2 didx, b1, 4, 3], mesh=[0, 1]>
!u = !fusion.tensor<f32[2 stream, 2 didx, 2, 2, 3, r4], mesh=[0, 1]>
!c = !fusion.tensor<f32[2 stream, r2, 2 didx, 2, 3], mesh=[0, 1]>
fusion.func @matmul_rs(%a: !a, %b: !b) -> !c {
  %bb = fusion.broadcast %b dims [0, 2] : !b -> !bb
  %u = fusion.matmul %a, %bb : !a, !bb -> !u
  %c = fusion.reduce sum %u dims [1] : !u -> !c
  fusion.return %c : !c
}
// CHECK-LABEL: hir.program @matmul_rs(
// CHECK:         %c = hir.allocate : !fusion.tensor<f32[2 stream, r2, 2 didx, 2, 3], mesh=[0, 1]>
// CHECK:         %via = hir.allocate symmetric : !fusion.tensor<f32[2, 2 didx, 2, 2, 3], mesh=[0, 1]>
// CHECK:           scf.for %s
// CHECK:             fusion.matmul %a_i_p, %bb_i_p into %u_i_p
// CHECK:           %w = hir.reduce_scatter %u_i -> %c_i via %via_i team [0, 1] op sum transport copy_engine
// CHECK-NEXT:      %a_i_p_1 = hir.alias_select %a_i[%me] axis 1
// CHECK-NEXT:      %bb_i_p_1 = hir.alias_select %bb_i[%me] axis 1
// CHECK-NEXT:      %u_i_p_1 = hir.alias_select %u_i[%me] axis 1
// CHECK-NEXT:      fusion.matmul %a_i_p_1, %bb_i_p_1 into %u_i_p_1
// CHECK-NEXT:      hir.wait %w
// SYM-LABEL: hir.program @matmul_rs(
// SYM:         %c = hir.allocate : !fusion.tensor<f32[2 stream, r2, 2 didx, 2, 3], mesh=[0, 1]>
// SYM:           %w = hir.reduce_scatter %u_i -> %c_i via %via_i team [0, 1] op sum transport copy_engine
// SYM-NEXT:      %a_i_p_1 = hir.alias_select %a_i[%me] axis 1
// RSP-LABEL: hir.program @matmul_rs(
// RSP:         %c = hir.allocate symmetric : !fusion.tensor<f32[2 stream, r2, 2 didx, 2, 3], mesh=[0, 1]>
// RSP-NOT:     %via
// RSP:             fusion.matmul %a_i_p, %bb_i_p into %u_i_p
// RSP-NEXT:      }
// RSP-NEXT:      %c_i = hir.alias_select %c[%i_1] axis 0
// RSP-NEXT:      %a_i_me = hir.alias_select %a_i[%me] axis 1
// RSP-NEXT:      %bb_i_me = hir.alias_select %bb_i[%me] axis 1
// RSP-NEXT:      %w = hir.reduce_scatter %u_i -> %c_i own(%a_i_me, %bb_i_me : {{.*}}) team [0, 1] op sum transport copy_engine
// RSP-NEXT:      hir.set_current_stream %user_stream
// RSP-NEXT:      hir.synchronize %worker_1
// RSP-NEXT:      hir.set_current_stream %worker_1
// RSP-NEXT:      hir.wait %w
// RSP:         hir.return %c
