// RUN: hostir-opt %s --split-input-file -p order-chunk-compute | filecheck %s
// RUN: hostir-opt %s --split-input-file -p order-chunk-compute,order-chunk-compute | filecheck %s
// RUN: hostir-opt %s --split-input-file -p 'order-chunk-compute{skew=false}' | filecheck %s --check-prefix=NOSKEW

// A stream loop that only sends, through the copy engines' two-phase all-reduce (matmul+AR
// as hostir-lower{transport=copy-engine} lowers it, without split-by-member): each
// iteration's worker first waits for the user's stream, which waited for the previous
// iteration's compute; the wait follows the handover of this iteration's compute to the
// user's stream; a loop after it joins every worker before the buffers are freed. Running
// the pass twice changes nothing more.
// CHECK-LABEL: hir.program @matmul_ar(
// CHECK:         scf.for %i_1 = %c0 to %extent step %c1 {
// CHECK-NEXT:      %n_1 = hir.number_of_streams
// CHECK-NEXT:      %key_1 = arith.remui %i_1, %n_1 : index
// CHECK-NEXT:      %worker_1 = hir.stream %key_1
// CHECK-NEXT:      hir.set_current_stream %worker_1
// CHECK-NEXT:      hir.synchronize %user_stream
// CHECK-NEXT:      %a_i = hir.alias_select %a[%i_1] axis 0
// CHECK-NEXT:      %u_i = hir.alias_select %u[%i_1] axis 0
// CHECK-NEXT:      %0 = fusion.matmul %a_i, %b into %u_i
// CHECK-NEXT:      %c_i = hir.alias_select %c[%i_1] axis 0
// CHECK-NEXT:      %via_i = hir.alias_select %via[%i_1] axis 0
// CHECK-NEXT:      %w = hir.allreduce %u_i -> %c_i via %via_i team [0, 1] op sum transport copy_engine
// CHECK-NEXT:      hir.set_current_stream %user_stream
// CHECK-NEXT:      hir.synchronize %worker_1
// CHECK-NEXT:      hir.set_current_stream %worker_1
// CHECK-NEXT:      hir.wait %w
// CHECK-NEXT:      hir.set_current_stream %user_stream
// CHECK-NEXT:    }
// CHECK-NEXT:    scf.for %i_2 = %c0 to %extent step %c1 {
// CHECK-NEXT:      %n_2 = hir.number_of_streams
// CHECK-NEXT:      %key_2 = arith.remui %i_2, %n_2 : index
// CHECK-NEXT:      %worker_2 = hir.stream %key_2
// CHECK-NEXT:      hir.synchronize %worker_2
// CHECK-NEXT:    }
// CHECK-NEXT:    hir.deallocate %u
// CHECK-NEXT:    hir.deallocate %via
// CHECK-NEXT:    hir.return %c
!a = !fusion.tensor<f32[2, 2 didx, 2, 4], mesh=[0, 1]>
!a_i = !fusion.tensor<f32[2 didx, 2, 4], mesh=[0, 1]>
!b = !fusion.tensor<f32[2 didx, 4, 4], mesh=[0, 1]>
!u = !fusion.tensor<f32[2 stream, 2 didx, 2, 4, r4], mesh=[0, 1]>
!u_i = !fusion.tensor<f32[2 didx, 2, 4, r4], mesh=[0, 1]>
!c = !fusion.tensor<f32[2 stream, r2, 2, 4], mesh=[0, 1]>
!c_i = !fusion.tensor<f32[r2, 2, 4], mesh=[0, 1]>
!via = !fusion.tensor<f32[2, 2, 2 didx, 2, 4], mesh=[0, 1]>
!via_i = !fusion.tensor<f32[2, 2 didx, 2, 4], mesh=[0, 1]>
hir.program @matmul_ar(%a: !a, %b: !b) -> !c {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %extent = arith.constant 2 : index
  %u = hir.allocate : !u
  %c = hir.allocate : !c
  %user_stream = hir.get_current_stream
  %via = hir.allocate symmetric : !via
  scf.for %i = %c0 to %extent step %c1 {
    %n = hir.number_of_streams
    %key = arith.remui %i, %n : index
    %worker = hir.stream %key
    hir.set_current_stream %worker
    hir.synchronize %user_stream
  }
  scf.for %i_1 = %c0 to %extent step %c1 {
    %n_1 = hir.number_of_streams
    %key_1 = arith.remui %i_1, %n_1 : index
    %worker_1 = hir.stream %key_1
    hir.set_current_stream %worker_1
    %a_i = hir.alias_select %a[%i_1] axis 0 : !a -> !a_i
    %u_i = hir.alias_select %u[%i_1] axis 0 : !u -> !u_i
    %0 = fusion.matmul %a_i, %b into %u_i : !a_i, !b -> !u_i
    %c_i = hir.alias_select %c[%i_1] axis 0 : !c -> !c_i
    %via_i = hir.alias_select %via[%i_1] axis 0 : !via -> !via_i
    %w = hir.allreduce %u_i -> %c_i via %via_i team [0, 1] op sum transport copy_engine : !u_i -> !c_i, !via_i
    hir.wait %w
    hir.set_current_stream %user_stream
    hir.synchronize %worker_1
  }
  hir.deallocate %u : !u
  hir.deallocate %via : !via
  hir.return %c : !c
}

// -----

// The same loop with its all-reduce on NCCL, one phase: it keeps its order (so does a
// copy-engine reduce-scatter's, whose chunks computed two at a time ran faster).
// CHECK-LABEL: hir.program @matmul_ar_nccl(
// CHECK:         scf.for %i_1 = %c0 to %extent step %c1 {
// CHECK:           hir.set_current_stream %worker_1
// CHECK-NEXT:      %a_i = hir.alias_select
// CHECK:           hir.wait %w
// CHECK-NEXT:      hir.set_current_stream %user_stream
// CHECK-NEXT:      hir.synchronize %worker_1
// CHECK-NEXT:    }
// CHECK-NEXT:    hir.deallocate %u
!a = !fusion.tensor<f32[2, 2 didx, 2, 4], mesh=[0, 1]>
!a_i = !fusion.tensor<f32[2 didx, 2, 4], mesh=[0, 1]>
!b = !fusion.tensor<f32[2 didx, 4, 4], mesh=[0, 1]>
!u = !fusion.tensor<f32[2 stream, 2 didx, 2, 4, r4], mesh=[0, 1]>
!u_i = !fusion.tensor<f32[2 didx, 2, 4, r4], mesh=[0, 1]>
!c = !fusion.tensor<f32[2 stream, r2, 2, 4], mesh=[0, 1]>
!c_i = !fusion.tensor<f32[r2, 2, 4], mesh=[0, 1]>
hir.program @matmul_ar_nccl(%a: !a, %b: !b) -> !c {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %extent = arith.constant 2 : index
  %u = hir.allocate : !u
  %c = hir.allocate : !c
  %user_stream = hir.get_current_stream
  scf.for %i = %c0 to %extent step %c1 {
    %n = hir.number_of_streams
    %key = arith.remui %i, %n : index
    %worker = hir.stream %key
    hir.set_current_stream %worker
    hir.synchronize %user_stream
  }
  scf.for %i_1 = %c0 to %extent step %c1 {
    %n_1 = hir.number_of_streams
    %key_1 = arith.remui %i_1, %n_1 : index
    %worker_1 = hir.stream %key_1
    hir.set_current_stream %worker_1
    %a_i = hir.alias_select %a[%i_1] axis 0 : !a -> !a_i
    %u_i = hir.alias_select %u[%i_1] axis 0 : !u -> !u_i
    %0 = fusion.matmul %a_i, %b into %u_i : !a_i, !b -> !u_i
    %c_i = hir.alias_select %c[%i_1] axis 0 : !c -> !c_i
    %w = hir.allreduce %u_i -> %c_i team [0, 1] op sum : !u_i -> !c_i
    hir.wait %w
    hir.set_current_stream %user_stream
    hir.synchronize %worker_1
  }
  hir.deallocate %u : !u
  hir.return %c : !c
}

// -----

// A loop that receives (an all-gather, then the matmul of what arrived) keeps its order:
// chaining the computes would make each chunk's also wait for the previous chunk's
// transfer.
// CHECK-LABEL: hir.program @allgather_matmul(
// CHECK:         scf.for %i_1 = %c0 to %extent step %c1 {
// CHECK:           hir.set_current_stream %worker_1
// CHECK-NEXT:      %a_i = hir.alias_select
// CHECK:           hir.wait %w
// CHECK-NEXT:      %c_i = hir.alias_select
// CHECK-NEXT:      fusion.matmul
// CHECK-NEXT:      hir.set_current_stream %user_stream
// CHECK-NEXT:      hir.synchronize %worker_1
// CHECK-NEXT:    }
// CHECK-NEXT:    hir.return %c
!a = !fusion.tensor<f32[2, 2 didx, 4], mesh=[0, 1]>
!a_i = !fusion.tensor<f32[2 didx, 4], mesh=[0, 1]>
!g = !fusion.tensor<f32[2 stream, 2, 4], mesh=[0, 1]>
!g_i = !fusion.tensor<f32[2, 4], mesh=[0, 1]>
!b = !fusion.tensor<f32[4, 3], mesh=[0, 1]>
!c = !fusion.tensor<f32[2 stream, 2, 3, r4], mesh=[0, 1]>
!c_i = !fusion.tensor<f32[2, 3, r4], mesh=[0, 1]>
hir.program @allgather_matmul(%a: !a, %b: !b) -> !c {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %extent = arith.constant 2 : index
  %g = hir.allocate : !g
  %c = hir.allocate : !c
  %user_stream = hir.get_current_stream
  scf.for %i = %c0 to %extent step %c1 {
    %n = hir.number_of_streams
    %key = arith.remui %i, %n : index
    %worker = hir.stream %key
    hir.set_current_stream %worker
    hir.synchronize %user_stream
  }
  scf.for %i_1 = %c0 to %extent step %c1 {
    %n_1 = hir.number_of_streams
    %key_1 = arith.remui %i_1, %n_1 : index
    %worker_1 = hir.stream %key_1
    hir.set_current_stream %worker_1
    %a_i = hir.alias_select %a[%i_1] axis 0 : !a -> !a_i
    %g_i = hir.alias_select %g[%i_1] axis 0 : !g -> !g_i
    %w = hir.allgather %a_i -> %g_i team [0, 1] : !a_i -> !g_i
    hir.wait %w
    %c_i = hir.alias_select %c[%i_1] axis 0 : !c -> !c_i
    %0 = fusion.matmul %g_i, %b into %c_i : !g_i, !b -> !c_i
    hir.set_current_stream %user_stream
    hir.synchronize %worker_1
  }
  hir.return %c : !c
}

// -----

// The same all-reduce computing this member's part itself (`own`, split-by-member's
// reduce-in-producer), when it is waited: the loop is skewed, so that the previous chunk's
// own GEMM follows this chunk's peer GEMM. The first iteration's compute and post are
// peeled before the loop, each iteration waits for the work of the one before (carried),
// and the last iteration's all-reduce is waited on the user's stream after the loop,
// before the workers are joined (three chunks here: a loop of two keeps its order,
// SKEWED_ITERATIONS). With skew=false the wait stays in its own iteration.
// CHECK-LABEL: hir.program @matmul_ar_own(
// CHECK:         %n_1 = hir.number_of_streams
// CHECK-NEXT:    %key_1 = arith.remui %c0, %n_1 : index
// CHECK-NEXT:    %worker_1 = hir.stream %key_1
// CHECK-NEXT:    hir.set_current_stream %worker_1
// CHECK-NEXT:    hir.synchronize %user_stream
// CHECK-NEXT:    %a_i = hir.alias_select %a[%c0] axis 0
// CHECK:           fusion.matmul %a_i_p, %bb_i_p into %u_i_p
// CHECK:         %w = hir.allreduce %u_i -> %c_i own(%a_i_me, %bb_i_me : !{{.*}}) team [0, 1] op sum transport copy_engine
// CHECK-NEXT:    hir.set_current_stream %user_stream
// CHECK-NEXT:    hir.synchronize %worker_1
// CHECK-NEXT:    %second = arith.constant 1 : index
// CHECK-NEXT:    %last = scf.for %i_1 = %second to %extent step %c1 iter_args(%previous = %w) -> (!hir.work) {
// CHECK-NEXT:      %n_2 = hir.number_of_streams
// CHECK-NEXT:      %key_2 = arith.remui %i_1, %n_2 : index
// CHECK-NEXT:      %worker_2 = hir.stream %key_2
// CHECK-NEXT:      hir.set_current_stream %worker_2
// CHECK-NEXT:      hir.synchronize %user_stream
// CHECK:             fusion.matmul
// CHECK:           %w_1 = hir.allreduce %u_i_1 -> %c_i_1 own(
// CHECK-NEXT:      hir.set_current_stream %user_stream
// CHECK-NEXT:      hir.synchronize %worker_2
// CHECK-NEXT:      hir.set_current_stream %worker_2
// CHECK-NEXT:      hir.wait %previous
// CHECK-NEXT:      hir.set_current_stream %user_stream
// CHECK-NEXT:      scf.yield %w_1 : !hir.work
// CHECK-NEXT:    }
// CHECK-NEXT:    hir.wait %last
// CHECK-NEXT:    scf.for %i_2 = %c0 to %extent step %c1 {
// CHECK:           hir.synchronize %worker_3
// CHECK-NEXT:    }
// CHECK-NEXT:    hir.deallocate %bb
// NOSKEW-LABEL: hir.program @matmul_ar_own(
// NOSKEW-NOT:     iter_args
// NOSKEW:           %w = hir.allreduce {{.*}} own(
// NOSKEW-NEXT:      hir.set_current_stream %user_stream
// NOSKEW-NEXT:      hir.synchronize %worker_1
// NOSKEW-NEXT:      hir.set_current_stream %worker_1
// NOSKEW-NEXT:      hir.wait %w
// NOSKEW-NEXT:      hir.set_current_stream %user_stream
// NOSKEW-NEXT:    }
!t0 = !fusion.tensor<f32[3, 2 didx, 2, 2, 4], mesh=[0, 1]>
!t1 = !fusion.tensor<f32[2 didx, 4, 3], mesh=[0, 1]>
!t2 = !fusion.tensor<f32[3 stream, r2, 2, 2, 3], mesh=[0, 1]>
!t3 = !fusion.tensor<f32[b1, 2 didx, b1, 4, 3], mesh=[0, 1]>
!t4 = !fusion.tensor<f32[3 stream, 2 didx, 2, 2, 3, r4], mesh=[0, 1]>
!t6 = !fusion.tensor<f32[2 didx, 2, 2, 4], mesh=[0, 1]>
!t7 = !fusion.tensor<f32[2 didx, b1, 4, 3], mesh=[0, 1]>
!t8 = !fusion.tensor<f32[2 didx, 2, 2, 3, r4], mesh=[0, 1]>
!t9 = !fusion.tensor<f32[2 didx, 2, 4], mesh=[0, 1]>
!t10 = !fusion.tensor<f32[2 didx, 2, 3, r4], mesh=[0, 1]>
!t11 = !fusion.tensor<f32[r2, 2, 2, 3], mesh=[0, 1]>
hir.program @matmul_ar_own(%a: !t0, %b: !t1) -> !t2 {
  %me = hir.team_position team [0, 1]
  %bb = hir.post_on_stream @matmul_ar_unit0(%b) : (!t1) -> !t3
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %extent = arith.constant 3 : index
  %u = hir.allocate : !t4
  %c = hir.allocate symmetric : !t2
  %user_stream = hir.get_current_stream
  scf.for %i = %c0 to %extent step %c1 {
    %n = hir.number_of_streams
    %key = arith.remui %i, %n : index
    %worker = hir.stream %key
    hir.set_current_stream %worker
    hir.synchronize %user_stream
  }
  scf.for %i_1 = %c0 to %extent step %c1 {
    %n_1 = hir.number_of_streams
    %key_1 = arith.remui %i_1, %n_1 : index
    %worker_1 = hir.stream %key_1
    hir.set_current_stream %worker_1
    %a_i = hir.alias_select %a[%i_1] axis 0 : !t0 -> !t6
    %bb_i = hir.alias_select %bb[%i_1] axis 0 : !t3 -> !t7
    %u_i = hir.alias_select %u[%i_1] axis 0 : !t4 -> !t8
    %s0 = arith.constant 1 : index
    %team = arith.constant 2 : index
    %c1_1 = arith.constant 1 : index
    scf.for %s = %s0 to %team step %c1_1 {
      %0 = arith.addi %me, %s : index
      %p = arith.remui %0, %team : index
      %a_i_p = hir.alias_select %a_i[%p] axis 1 : !t6 -> !t9
      %bb_i_p = hir.alias_select %bb_i[%p] axis 1 : !t7 -> !t1
      %u_i_p = hir.alias_select %u_i[%p] axis 1 : !t8 -> !t10
      %1 = fusion.matmul %a_i_p, %bb_i_p into %u_i_p : !t9, !t1 -> !t10
    }
    %c_i = hir.alias_select %c[%i_1] axis 0 : !t2 -> !t11
    %a_i_me = hir.alias_select %a_i[%me] axis 1 : !t6 -> !t9
    %bb_i_me = hir.alias_select %bb_i[%me] axis 1 : !t7 -> !t1
    %w = hir.allreduce %u_i -> %c_i own(%a_i_me, %bb_i_me : !t9, !t1) team [0, 1] op sum transport copy_engine : !t8 -> !t11
    hir.wait %w
    hir.set_current_stream %user_stream
    hir.synchronize %worker_1
  }
  hir.deallocate %bb : !t3
  hir.deallocate %u : !t4
  hir.return %c : !t2
}
fusion.func @matmul_ar_unit0(%b: !t1) -> !t3 {
  %bb = fusion.broadcast %b dims [0, 2] : !t1 -> !t3
  fusion.return %bb : !t3
}
