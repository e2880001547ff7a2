// RUN: hostir-opt %s --split-input-file -p stream-parallel-type,convert-op-to-communication | filecheck %s

// nvFuser's collective-based pipelines (MultiDeviceStreamParallelTypeTest, tests/cpp/test_multidevice_stream_parallel_type.cpp),
// D = 2 devices: each main-loop body after convert-op-to-communication. The resharding
// set/reduce of chunk i becomes its collective + wait on the worker stream; every rank
// posts the same sequence. (nvFuser also shows a no-op Allocate of the already bound
// chunk before each collective; convert-op-to-communication writes into the chunk directly.)

// Allgather: tv0[i0, D(i2)] -> tv1 = set [S(i0), i2].
hir.program @allgather(%a: !fusion.tensor<f32[4, 2 didx], mesh=[0, 1]>) -> !fusion.tensor<f32[4 stream, 2], mesh=[0, 1]> {
  %b = fusion.set %a : !fusion.tensor<f32[4, 2 didx], mesh=[0, 1]> -> !fusion.tensor<f32[4 stream, 2], mesh=[0, 1]>
  hir.return %b : !fusion.tensor<f32[4 stream, 2], mesh=[0, 1]>
}
// CHECK-LABEL: hir.program @allgather
// CHECK:         %b = hir.allocate
// CHECK-NEXT:    %user_stream = hir.get_current_stream
// CHECK-NEXT:    scf.for
// CHECK:         scf.for
// CHECK:           hir.set_current_stream %worker
// CHECK-NEXT:      %a_i = hir.alias_select %a
// CHECK-NEXT:      %b_i = hir.alias_select %b
// CHECK-NEXT:      %[[W:.*]] = hir.allgather %a_i -> %b_i team [0, 1] : !fusion.tensor<f32[2 didx], mesh=[0, 1]> -> !fusion.tensor<f32[2], mesh=[0, 1]>
// CHECK-NEXT:      hir.wait %[[W]]
// CHECK-NEXT:      hir.set_current_stream %user_stream

// -----

// Allreduce: tv0[i0, D(i2), i3] -> tv1 = sum(tv0, {1}) [S(i0), r(D), i3].
hir.program @allreduce(%a: !fusion.tensor<f32[4, 2 didx, 8], mesh=[0, 1]>) -> !fusion.tensor<f32[4 stream, r2 didx, 8], mesh=[0, 1]> {
  %b = fusion.reduce sum %a dims [1] : !fusion.tensor<f32[4, 2 didx, 8], mesh=[0, 1]> -> !fusion.tensor<f32[4 stream, r2 didx, 8], mesh=[0, 1]>
  hir.return %b : !fusion.tensor<f32[4 stream, r2 didx, 8], mesh=[0, 1]>
}
// CHECK-LABEL: hir.program @allreduce
// CHECK:         hir.get_current_stream
// CHECK-NEXT:    scf.for
// CHECK:         scf.for
// CHECK:           hir.set_current_stream %worker
// CHECK-NEXT:      %a_i = hir.alias_select %a
// CHECK-NEXT:      %b_i = hir.alias_select %b
// CHECK-NEXT:      %[[W:.*]] = hir.allreduce %a_i -> %b_i team [0, 1] op sum
// CHECK-NEXT:      hir.wait %[[W]]
// CHECK-NEXT:      hir.set_current_stream %user_stream

// -----

// ReduceScatter: tv0[i0, D(i2), i3, i4] -> sum(tv0, {1}) [S(i0), r(i2), D(i3), i4].
hir.program @reduce_scatter(%a: !fusion.tensor<f32[4, 2 didx, 2, 8], mesh=[0, 1]>) -> !fusion.tensor<f32[4 stream, r2, 2 didx, 8], mesh=[0, 1]> {
  %b = fusion.reduce sum %a dims [1] : !fusion.tensor<f32[4, 2 didx, 2, 8], mesh=[0, 1]> -> !fusion.tensor<f32[4 stream, r2, 2 didx, 8], mesh=[0, 1]>
  hir.return %b : !fusion.tensor<f32[4 stream, r2, 2 didx, 8], mesh=[0, 1]>
}
// CHECK-LABEL: hir.program @reduce_scatter
// CHECK:         hir.get_current_stream
// CHECK-NEXT:    scf.for
// CHECK:         scf.for
// CHECK:           hir.set_current_stream %worker
// CHECK-NEXT:      %a_i = hir.alias_select %a
// CHECK-NEXT:      %b_i = hir.alias_select %b
// CHECK-NEXT:      %[[W:.*]] = hir.reduce_scatter %a_i -> %b_i team [0, 1] op sum
// CHECK-NEXT:      hir.wait %[[W]]
// CHECK-NEXT:      hir.set_current_stream %user_stream

// -----

// AG_before_Matmul: decompose-reshardings put %t = set(%a) before the matmul; it inherits
// the matmul's stream axis, so the allgather of chunk i lands in the loop next to the
// matmul of chunk i, on the same worker stream.
hir.program @ag_before_matmul(%a: !fusion.tensor<f32[4, 2 didx, 2, 8], mesh=[0, 1]>, %b: !fusion.tensor<f32[8, 3], mesh=[0, 1]>) -> !fusion.tensor<f32[4 stream, 2, 2, 3, r8], mesh=[0, 1]> {
  %t = fusion.set %a : !fusion.tensor<f32[4, 2 didx, 2, 8], mesh=[0, 1]> -> !fusion.tensor<f32[4 stream, 2, 2, 8], mesh=[0, 1]>
  %c = fusion.matmul %t, %b : !fusion.tensor<f32[4 stream, 2, 2, 8], mesh=[0, 1]>, !fusion.tensor<f32[8, 3], mesh=[0, 1]> -> !fusion.tensor<f32[4 stream, 2, 2, 3, r8], mesh=[0, 1]>
  hir.return %c : !fusion.tensor<f32[4 stream, 2, 2, 3, r8], mesh=[0, 1]>
}
// CHECK-LABEL: hir.program @ag_before_matmul
// CHECK:         %t = hir.allocate
// CHECK-NEXT:    %c = hir.allocate
// CHECK-NEXT:    %user_stream = hir.get_current_stream
// CHECK-NEXT:    scf.for
// CHECK:         scf.for
// CHECK:           hir.set_current_stream %worker
// CHECK-NEXT:      %a_i = hir.alias_select %a
// CHECK-NEXT:      %t_i = hir.alias_select %t
// CHECK-NEXT:      %[[W:.*]] = hir.allgather %a_i -> %t_i team [0, 1]
// CHECK-NEXT:      hir.wait %[[W]]
// CHECK-NEXT:      %c_i = hir.alias_select %c
// CHECK-NEXT:      fusion.matmul %t_i, %b into %c_i
// CHECK-NEXT:      hir.set_current_stream %user_stream

// -----

// AG_after_Matmul (the set inserted after the matmul): matmul on the sharded chunk, then
// allgather of its result.
hir.program @ag_after_matmul(%a: !fusion.tensor<f32[4, 2 didx, 2, 8], mesh=[0, 1]>, %b: !fusion.tensor<f32[8, 3], mesh=[0, 1]>) -> !fusion.tensor<f32[4 stream, 2, 2, 3], mesh=[0, 1]> {
  %u = fusion.matmul %a, %b : !fusion.tensor<f32[4, 2 didx, 2, 8], mesh=[0, 1]>, !fusion.tensor<f32[8, 3], mesh=[0, 1]> -> !fusion.tensor<f32[4 stream, 2 didx, 2, 3, r8], mesh=[0, 1]>
  %c = fusion.set %u : !fusion.tensor<f32[4 stream, 2 didx, 2, 3, r8], mesh=[0, 1]> -> !fusion.tensor<f32[4 stream, 2, 2, 3], mesh=[0, 1]>
  hir.return %c : !fusion.tensor<f32[4 stream, 2, 2, 3], mesh=[0, 1]>
}
// CHECK-LABEL: hir.program @ag_after_matmul
// CHECK:         hir.get_current_stream
// CHECK-NEXT:    scf.for
// CHECK:         scf.for
// CHECK:           hir.set_current_stream %worker
// CHECK-NEXT:      %a_i = hir.alias_select %a
// CHECK-NEXT:      %u_i = hir.alias_select %u
// CHECK-NEXT:      fusion.matmul %a_i, %b into %u_i
// CHECK-NEXT:      %c_i = hir.alias_select %c
// CHECK-NEXT:      %[[W:.*]] = hir.allgather %u_i -> %c_i team [0, 1]
// CHECK-NEXT:      hir.wait %[[W]]
// CHECK-NEXT:      hir.set_current_stream %user_stream

// -----

// matmul_AR: a[S, D(D), M/S, K/D], b[D(D), K/D, N] (with a leading broadcast axis: our
// batched matmul broadcasts equal ranks), partial products u, c = sum(u, {1}).
hir.program @matmul_ar(%a: !fusion.tensor<f32[4, 2 didx, 2, 4], mesh=[0, 1]>, %b: !fusion.tensor<f32[b1, 2 didx, 4, 3], mesh=[0, 1]>) -> !fusion.tensor<f32[4 stream, r2 didx, 2, 3], mesh=[0, 1]> {
  %u = fusion.matmul %a, %b : !fusion.tensor<f32[4, 2 didx, 2, 4], mesh=[0, 1]>, !fusion.tensor<f32[b1, 2 didx, 4, 3], mesh=[0, 1]> -> !fusion.tensor<f32[4 stream, 2 didx, 2, 3, r4], mesh=[0, 1]>
  %c = fusion.reduce sum %u dims [1] : !fusion.tensor<f32[4 stream, 2 didx, 2, 3, r4], mesh=[0, 1]> -> !fusion.tensor<f32[4 stream, r2 didx, 2, 3], mesh=[0, 1]>
  hir.return %c : !fusion.tensor<f32[4 stream, r2 didx, 2, 3], mesh=[0, 1]>
}
// CHECK-LABEL: hir.program @matmul_ar
// CHECK:         hir.get_current_stream
// CHECK-NEXT:    scf.for
// CHECK:         scf.for
// CHECK:           hir.set_current_stream %worker
// CHECK-NEXT:      %a_i = hir.alias_select %a
// CHECK-NEXT:      %b_i = hir.alias_select %b[%{{.*}}] axis 0 : !fusion.tensor<f32[b1, 2 didx, 4, 3], mesh=[0, 1]>
// CHECK-NEXT:      %u_i = hir.alias_select %u
// CHECK-NEXT:      fusion.matmul %a_i, %b_i into %u_i
// CHECK-NEXT:      %c_i = hir.alias_select %c
// CHECK-NEXT:      %[[W:.*]] = hir.allreduce %u_i -> %c_i team [0, 1] op sum
// CHECK-NEXT:      hir.wait %[[W]]
// CHECK-NEXT:      hir.set_current_stream %user_stream

// -----

// matmul_RS_through_bcast: the broadcast is a kernel unit, not stream-parallel: it stays
// a post_on_stream in front of the loop; the loop selects its broadcast axis.
fusion.func @bcast_unit(%b: !fusion.tensor<f32[2 didx, 4, 3], mesh=[0, 1]>) -> !fusion.tensor<f32[b1, 2 didx, b1, 4, 3], mesh=[0, 1]> {
  %bb = fusion.broadcast %b dims [0, 2] : !fusion.tensor<f32[2 didx, 4, 3], mesh=[0, 1]> -> !fusion.tensor<f32[b1, 2 didx, b1, 4, 3], mesh=[0, 1]>
  fusion.return %bb : !fusion.tensor<f32[b1, 2 didx, b1, 4, 3], mesh=[0, 1]>
}
hir.program @matmul_rs(%a: !fusion.tensor<f32[4, 2 didx, 2, 2, 4], mesh=[0, 1]>, %b: !fusion.tensor<f32[2 didx, 4, 3], mesh=[0, 1]>) -> !fusion.tensor<f32[4 stream, r2, 2 didx, 2, 3], mesh=[0, 1]> {
  %bb = hir.post_on_stream @bcast_unit(%b) : (!fusion.tensor<f32[2 didx, 4, 3], mesh=[0, 1]>) -> !fusion.tensor<f32[b1, 2 didx, b1, 4, 3], mesh=[0, 1]>
  %u = fusion.matmul %a, %bb : !fusion.tensor<f32[4, 2 didx, 2, 2, 4], mesh=[0, 1]>, !fusion.tensor<f32[b1, 2 didx, b1, 4, 3], mesh=[0, 1]> -> !fusion.tensor<f32[4 stream, 2 didx, 2, 2, 3, r4], mesh=[0, 1]>
  %c = fusion.reduce sum %u dims [1] : !fusion.tensor<f32[4 stream, 2 didx, 2, 2, 3, r4], mesh=[0, 1]> -> !fusion.tensor<f32[4 stream, r2, 2 didx, 2, 3], mesh=[0, 1]>
  hir.return %c : !fusion.tensor<f32[4 stream, r2, 2 didx, 2, 3], mesh=[0, 1]>
}
// CHECK-LABEL: hir.program @matmul_rs
// CHECK-NEXT:    %bb = hir.post_on_stream @bcast_unit(%b)
// CHECK-NEXT:    arith.constant 0 : index
// CHECK-NEXT:    arith.constant 1 : index
// CHECK-NEXT:    arith.constant 4 : index
// CHECK-NEXT:    %u = hir.allocate
// CHECK-NEXT:    %c = hir.allocate
// CHECK-NEXT:    %user_stream = hir.get_current_stream
// CHECK-NEXT:    scf.for
// CHECK:         scf.for
// CHECK:           hir.set_current_stream %worker
// CHECK-NEXT:      %a_i = hir.alias_select %a
// CHECK-NEXT:      %bb_i = hir.alias_select %bb[%{{.*}}] axis 0 : !fusion.tensor<f32[b1, 2 didx, b1, 4, 3], mesh=[0, 1]> -> !fusion.tensor<f32[2 didx, b1, 4, 3], mesh=[0, 1]>
// CHECK-NEXT:      %u_i = hir.alias_select %u
// CHECK-NEXT:      fusion.matmul %a_i, %bb_i into %u_i
// CHECK-NEXT:      %c_i = hir.alias_select %c
// CHECK-NEXT:      %[[W:.*]] = hir.reduce_scatter %u_i -> %c_i team [0, 1] op sum
// CHECK-NEXT:      hir.wait %[[W]]
// CHECK-NEXT:      hir.set_current_stream %user_stream

// -----

// Two independent pipelines in one loop, as an attention block's projections: QKV =
// allgather(x) @ wqkv, written first, and o = reduce_scatter(a @ wo). An iteration runs
// what waits for no received data first -- the output projection and its reduce-scatter --
// and the all-gather with the matmul that reads it after, so that the last
// reduce-scatter is not left exposed at the end of the loop.
hir.program @independent_pipelines(%x: !fusion.tensor<f32[4, 2 didx, 2, 8], mesh=[0, 1]>, %wqkv: !fusion.tensor<f32[8, 3], mesh=[0, 1]>, %a: !fusion.tensor<f32[4, 2 didx, 2, 2, 4], mesh=[0, 1]>, %wo: !fusion.tensor<f32[b1, 2 didx, b1, 4, 3], mesh=[0, 1]>) -> (!fusion.tensor<f32[4 stream, 2, 2, 3, r8], mesh=[0, 1]>, !fusion.tensor<f32[4 stream, r2, 2 didx, 2, 3], mesh=[0, 1]>) {
  %t = fusion.set %x : !fusion.tensor<f32[4, 2 didx, 2, 8], mesh=[0, 1]> -> !fusion.tensor<f32[4 stream, 2, 2, 8], mesh=[0, 1]>
  %qkv = fusion.matmul %t, %wqkv : !fusion.tensor<f32[4 stream, 2, 2, 8], mesh=[0, 1]>, !fusion.tensor<f32[8, 3], mesh=[0, 1]> -> !fusion.tensor<f32[4 stream, 2, 2, 3, r8], mesh=[0, 1]>
  %u = fusion.matmul %a, %wo : !fusion.tensor<f32[4, 2 didx, 2, 2, 4], mesh=[0, 1]>, !fusion.tensor<f32[b1, 2 didx, b1, 4, 3], mesh=[0, 1]> -> !fusion.tensor<f32[4 stream, 2 didx, 2, 2, 3, r4], mesh=[0, 1]>
  %o = fusion.reduce sum %u dims [1] : !fusion.tensor<f32[4 stream, 2 didx, 2, 2, 3, r4], mesh=[0, 1]> -> !fusion.tensor<f32[4 stream, r2, 2 didx, 2, 3], mesh=[0, 1]>
  hir.return %qkv, %o : !fusion.tensor<f32[4 stream, 2, 2, 3, r8], mesh=[0, 1]>, !fusion.tensor<f32[4 stream, r2, 2 didx, 2, 3], mesh=[0, 1]>
}
// CHECK-LABEL: hir.program @independent_pipelines
// CHECK:         scf.for
// CHECK:         scf.for
// CHECK:           hir.set_current_stream %worker
// CHECK-NEXT:      %a_i = hir.alias_select %a
// CHECK-NEXT:      %wo_i = hir.alias_select %wo
// CHECK-NEXT:      %u_i = hir.alias_select %u
// CHECK-NEXT:      fusion.matmul %a_i, %wo_i into %u_i
// CHECK-NEXT:      %o_i = hir.alias_select %o
// CHECK-NEXT:      %[[RS:.*]] = hir.reduce_scatter %u_i -> %o_i team [0, 1] op sum
// CHECK-NEXT:      hir.wait %[[RS]]
// CHECK-NEXT:      %x_i = hir.alias_select %x
// CHECK-NEXT:      %t_i = hir.alias_select %t
// CHECK-NEXT:      %[[AG:.*]] = hir.allgather %x_i -> %t_i team [0, 1]
// CHECK-NEXT:      hir.wait %[[AG]]
// CHECK-NEXT:      %qkv_i = hir.alias_select %qkv
// CHECK-NEXT:      fusion.matmul %t_i, %wqkv into %qkv_i
// CHECK-NEXT:      hir.set_current_stream %user_stream
// CHECK-NOT:     scf.for

// -----

// P2P DID -> Stream pipeline (nvFuser #4515, "linear allgather"): the stream axis of %t is
// the device axis of %a. Iteration %i handles the chunk of member (me + i) mod 4: a shift
// by %i receives that member's shard into its chunk of %t (a local copy at %i = 0, so the
// first matmul needs no communication) and sends this rank's shard to member (me - i) mod 4;
// the matmul then computes the same chunk, on the same worker stream.
hir.program @p2p_ag_matmul(%a: !fusion.tensor<f32[4 didx, 2, 8], mesh=[0, 1, 2, 3]>, %b: !fusion.tensor<f32[8, 3], mesh=[0, 1, 2, 3]>) -> !fusion.tensor<f32[4 stream, 2, 3, r8], mesh=[0, 1, 2, 3]> {
  %t = fusion.set %a : !fusion.tensor<f32[4 didx, 2, 8], mesh=[0, 1, 2, 3]> -> !fusion.tensor<f32[4 stream, 2, 8], mesh=[0, 1, 2, 3]>
  %c = fusion.matmul %t, %b : !fusion.tensor<f32[4 stream, 2, 8], mesh=[0, 1, 2, 3]>, !fusion.tensor<f32[8, 3], mesh=[0, 1, 2, 3]> -> !fusion.tensor<f32[4 stream, 2, 3, r8], mesh=[0, 1, 2, 3]>
  hir.return %c : !fusion.tensor<f32[4 stream, 2, 3, r8], mesh=[0, 1, 2, 3]>
}
// CHECK-LABEL: hir.program @p2p_ag_matmul
// CHECK:         %t = hir.allocate : !fusion.tensor<f32[4 stream, 2, 8], mesh=[0, 1, 2, 3]>
// CHECK-NEXT:    %c = hir.allocate
// CHECK-NEXT:    %user_stream = hir.get_current_stream
// CHECK-NEXT:    scf.for
// CHECK:         scf.for %[[I:.+]] = %c0 to %extent step %c1 {
// CHECK:           hir.set_current_stream %worker
// CHECK-NEXT:      %me = hir.team_position team [0, 1, 2, 3]
// CHECK-NEXT:      %team_size = arith.constant 4 : index
// CHECK-NEXT:      %[[SUM:.+]] = arith.addi %[[I]], %me : index
// CHECK-NEXT:      %member = arith.remui %[[SUM]], %team_size : index
// CHECK-NEXT:      %t_i = hir.alias_select %t[%member] axis 0 : !fusion.tensor<f32[4 stream, 2, 8], mesh=[0, 1, 2, 3]> -> !fusion.tensor<f32[2, 8], mesh=[0, 1, 2, 3]>
// CHECK-NEXT:      %[[W:.+]] = hir.shift %a -> %t_i team [0, 1, 2, 3] offset %[[I]] : !fusion.tensor<f32[4 didx, 2, 8], mesh=[0, 1, 2, 3]> -> !fusion.tensor<f32[2, 8], mesh=[0, 1, 2, 3]>
// CHECK-NEXT:      hir.wait %[[W]]
// CHECK-NEXT:      %c_i = hir.alias_select %c[%member] axis 0
// CHECK-NEXT:      fusion.matmul %t_i, %b into %c_i
// CHECK-NEXT:      hir.set_current_stream %user_stream
// CHECK-NEXT:      hir.synchronize %worker
// CHECK-NEXT:    }
// CHECK-NOT:     hir.allgather
