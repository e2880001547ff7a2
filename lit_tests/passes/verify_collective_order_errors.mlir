// Hand-written host programs whose ranks would wait forever for each other: each is
// refused at the first post that cannot complete. The program text is the same on every
// rank; what differs is which posts a rank makes (a transfer of a buffer outside its mesh
// is skipped) and the values it computes.
// The verifier refuses some of them before the pass runs (VERIFIER); the pass is checked on
// every one with the verifier off.
// RUN: hostir-opt %s --split-input-file --verify-diagnostics --disable-verify -p verify-collective-order | filecheck %s
// RUN: hostir-opt %s --split-input-file --verify-diagnostics -p verify-collective-order | filecheck %s --check-prefix=VERIFIER

// Both ranks receive first (rank 0 holds %a, rank 1 holds %b): nobody ever sends.
// CHECK: verify_collective_order_errors.mlir:[[# @LINE + 8]]:3: error: 'hir.recv' op would wait forever: rank 0 receives 4 elements of f32 from rank 1, but rank 1 is waiting in 'hir.recv' at {{.*}}verify_collective_order_errors.mlir:[[# @LINE + 9]]:3
!on0 = !fusion.tensor<f32[4], mesh=[0]>
!on1 = !fusion.tensor<f32[4], mesh=[1]>
hir.program @both_receive_first() {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %a = hir.allocate : !on0
  %b = hir.allocate : !on1
  %wa = hir.recv %a, %c1 : !on0
  %wb = hir.recv %b, %c0 : !on1
  %sa = hir.send %a, %c1 : !on0
  %sb = hir.send %b, %c0 : !on1
  hir.wait %wa
  hir.wait %wb
  hir.wait %sa
  hir.wait %sb
  hir.return
}

// -----

// Both ranks send first: with NCCL a send completes only when its receive is posted.
// CHECK: verify_collective_order_errors.mlir:[[# @LINE + 8]]:3: error: 'hir.send' op would wait forever: rank 0 sends 4 elements of f32 to rank 1, but rank 1 is waiting in 'hir.send' at {{.*}}:[[# @LINE + 9]]:3
!on0 = !fusion.tensor<f32[4], mesh=[0]>
!on1 = !fusion.tensor<f32[4], mesh=[1]>
hir.program @both_send_first() {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %a = hir.allocate : !on0
  %b = hir.allocate : !on1
  %sa = hir.send %a, %c1 : !on0
  %sb = hir.send %b, %c0 : !on1
  %ra = hir.recv %a, %c1 : !on0
  %rb = hir.recv %b, %c0 : !on1
  hir.wait %sa
  hir.wait %sb
  hir.wait %ra
  hir.wait %rb
  hir.return
}

// -----

// A send without its receive: rank 1 posts nothing.
// CHECK: verify_collective_order_errors.mlir:[[# @LINE + 4]]:3: error: 'hir.send' op would wait forever: rank 0 sends 4 elements of f32 to rank 1, but rank 1 never posts the matching hir.recv
!on0 = !fusion.tensor<f32[4], mesh=[0]>
hir.program @send_without_receive(%a: !on0, %b: !fusion.tensor<f32[4], mesh=[1]>) {
  %c1 = arith.constant 1 : index
  %s = hir.send %a, %c1 : !on0
  hir.wait %s
  hir.return
}

// -----

// A receive without a send (bad_inputs/run_cli/recv_without_sender.mlir times out at run time).
// CHECK: verify_collective_order_errors.mlir:[[# @LINE + 3]]:3: error: 'hir.recv' op would wait forever: rank 0 receives 4 elements of f32 from rank 1, but rank 1 never sends to rank 0
hir.program @receive_without_send(%x: !fusion.tensor<f32[4], mesh=[0]>, %y: !fusion.tensor<f32[4], mesh=[1]>) {
  %p = arith.constant 1 : index
  %w = hir.recv %x, %p : !fusion.tensor<f32[4], mesh=[0]>
  hir.wait %w
  hir.return
}

// -----

// The two ends of a transfer have different sizes: the meshes give the ranks different buffers.
// CHECK: verify_collective_order_errors.mlir:[[# @LINE + 8]]:3: error: 'hir.send' op the ends of a transfer disagree: rank 0 sends 4 elements of f32 to rank 1, but rank 1 receives 8 elements of f32 from rank 0 ('hir.recv' at {{.*}}:[[# @LINE + 9]]:3)
!on0 = !fusion.tensor<f32[4], mesh=[0]>
!on1 = !fusion.tensor<f32[8], mesh=[1]>
hir.program @sizes_differ() {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %a = hir.allocate : !on0
  %b = hir.allocate : !on1
  %s = hir.send %a, %c1 : !on0
  %r = hir.recv %b, %c0 : !on1
  hir.wait %s
  hir.wait %r
  hir.return
}

// -----

// Element types differ too.
// CHECK: error: 'hir.send' op the ends of a transfer disagree: rank 0 sends 4 elements of f32 to rank 1, but rank 1 receives 4 elements of bf16 from rank 0
hir.program @element_types_differ(%a: !fusion.tensor<f32[4], mesh=[0]>, %b: !fusion.tensor<bf16[4], mesh=[1]>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %s = hir.send %a, %c1 : !fusion.tensor<f32[4], mesh=[0]>
  %r = hir.recv %b, %c0 : !fusion.tensor<bf16[4], mesh=[1]>
  hir.wait %s
  hir.wait %r
  hir.return
}

// -----

// A team member without the input buffer an allgather needs cannot post it.
// CHECK: verify_collective_order_errors.mlir:[[# @LINE + 6]]:3: error: 'hir.allgather' op rank 2 of team [0, 1, 2] holds no input buffer (its mesh is [0, 1]), so it cannot post it and rank(s) 0, 1 would wait for it forever
// VERIFIER: verify_collective_order_errors.mlir:[[# @LINE + 5]]:3: error: 'hir.allgather' op team [0, 1, 2] names device 2, which holds no input buffer (mesh [0, 1])
!in = !fusion.tensor<f32[2 didx, 4], mesh=[0, 1]>
!out = !fusion.tensor<f32[6, 4], mesh=[0, 1, 2]>
hir.program @member_without_input(%x: !in) -> !out {
  %o = hir.allocate : !out
  %w = hir.allgather %x -> %o team [0, 1, 2] : !in -> !out
  hir.wait %w
  hir.return %o : !out
}

// -----

// On a team along a mesh axis, each rank posts with its slice: rank 3's row is [2, 3].
// CHECK: verify_collective_order_errors.mlir:[[# @LINE + 6]]:3: error: 'hir.allreduce' op rank 3 of team [2, 3] holds no input buffer (its mesh is [0, 1, 2]), so it cannot post it and rank(s) 2 would wait for it forever
// VERIFIER: verify_collective_order_errors.mlir:[[# @LINE + 5]]:3: error: 'hir.allreduce' op team [[0, 1], [2, 3]] along didx names device 3, which holds no input buffer (mesh [0, 1, 2])
!in = !fusion.tensor<f32[4], mesh=[0, 1, 2]>
!t = !fusion.tensor<f32[4], mesh=[[0, 1], [2, 3]]>
hir.program @row_member_without_input(%x: !in) -> !t {
  %o = hir.allocate : !t
  %w = hir.allreduce %x -> %o team [[0, 1], [2, 3]] along didx op sum : !in -> !t
  hir.wait %w
  hir.return %o : !t
}

// -----

// A non-root member of a broadcast needs an output buffer.
// CHECK: error: 'hir.broadcast' op rank 1 of team [0, 1] holds no output buffer (its mesh is [0]), so it cannot post it and rank(s) 0 would wait for it forever
// VERIFIER: error: 'hir.broadcast' op team [0, 1] names device 1 outside the buffers' meshes [0]
!t = !fusion.tensor<f32[4], mesh=[0]>
hir.program @receiver_without_output(%x: !t) -> !t {
  %o = hir.allocate : !t
  %w = hir.broadcast %x -> %o team [0, 1] root 0 : !t -> !t
  hir.wait %w
  hir.return %o : !t
}

// -----

// A collective a member reaches only after a receive that never completes: rank 1
// receives first, rank 0 sends only after the allreduce.
// CHECK: verify_collective_order_errors.mlir:[[# @LINE + 8]]:3: error: 'hir.recv' op would wait forever: rank 1 receives 4 elements of f32 from rank 0, but rank 0 is waiting in 'hir.allreduce' at {{.*}}:[[# @LINE + 9]]:3
!on0 = !fusion.tensor<f32[4], mesh=[0]>
!on1 = !fusion.tensor<f32[4], mesh=[1]>
!t = !fusion.tensor<f32[4], mesh=[0, 1]>
hir.program @collective_behind_a_receive(%x: !t, %a: !on0, %b: !on1) -> !t {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %o = hir.allocate : !t
  %r = hir.recv %b, %c0 : !on1
  %w = hir.allreduce %x -> %o team [0, 1] op sum : !t -> !t
  %s = hir.send %a, %c1 : !on0
  hir.wait %r
  hir.wait %w
  hir.wait %s
  hir.return %o : !t
}

// -----

// A peer computed for each iteration of an unrolled loop: in iteration 1 rank 0 sends to
// rank 2, which never receives (its buffer's mesh leaves it out of the receives).
// CHECK: verify_collective_order_errors.mlir:[[# @LINE + 9]]:5: error: 'hir.send' op would wait forever (loop iteration 1): rank 0 sends 4 elements of f32 to rank 2, but rank 2 never posts the matching hir.recv
!on0 = !fusion.tensor<f32[4], mesh=[0]>
!on1 = !fusion.tensor<f32[4], mesh=[1]>
hir.program @peer_from_the_loop_index(%a: !on0, %b: !on1, %c: !fusion.tensor<f32[4], mesh=[2]>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  scf.for %i = %c0 to %c2 step %c1 {
    %peer = arith.addi %i, %c1 : index
    %s = hir.send %a, %peer : !on0
    %r = hir.recv %b, %c0 : !on1
    hir.wait %s
    hir.wait %r
  }
  hir.return
}

// -----

// The world is smaller than the team.
// RUN: hostir-opt %s --split-input-file --verify-diagnostics -p 'verify-collective-order{world-size=2}' | filecheck %s --check-prefix=WORLD
// WORLD: error: 'hir.allreduce' op team [0, 1, 2] names devices [2] outside the world of 2 ranks
!t = !fusion.tensor<f32[4]>
hir.program @team_outside_the_world(%x: !t) -> !t {
  %o = hir.allocate : !t
  %w = hir.allreduce %x -> %o team [0, 1, 2] op sum : !t -> !t
  hir.wait %w
  hir.return %o : !t
}

// -----

// A peer outside the world, and a rank sending to itself.
// CHECK: error: 'hir.send' op on rank 0, peer 5 is not another rank of the world of 2
hir.program @peer_outside_the_world(%x: !fusion.tensor<f32[4], mesh=[0]>, %y: !fusion.tensor<f32[4], mesh=[1]>) {
  %p = arith.constant 5 : index
  %w = hir.send %x, %p : !fusion.tensor<f32[4], mesh=[0]>
  hir.wait %w
  hir.return
}

// -----

// CHECK: error: 'hir.recv' op on rank 1, peer 1 is not another rank of the world of 2
hir.program @peer_is_itself(%x: !fusion.tensor<f32[4], mesh=[1]>) {
  %p = arith.constant 1 : index
  %w = hir.recv %x, %p : !fusion.tensor<f32[4], mesh=[1]>
  hir.wait %w
  hir.return
}

// -----

// A peer given as an argument may differ between ranks: the order cannot be checked.
// CHECK: verify_collective_order_errors.mlir:[[# @LINE + 3]]:3: error: 'hir.send' op cannot be verified: its peer on rank 0 depends on %peer, an argument of @peer_argument
!t = !fusion.tensor<f32[4], mesh=[0, 1]>
hir.program @peer_argument(%x: !t, %peer: index) {
  %w = hir.send %x, %peer : !t
  hir.wait %w
  hir.return
}

// -----

// A loop whose trip count may differ between ranks, around a collective.
// CHECK: verify_collective_order_errors.mlir:[[# @LINE + 6]]:3: error: 'scf.for' op communicates in its body, but its bounds may differ between ranks: they depend on %n, an argument of @trip_count_argument
!t = !fusion.tensor<f32[4], mesh=[0, 1]>
hir.program @trip_count_argument(%x: !t, %n: index) -> !t {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %o = hir.allocate : !t
  scf.for %i = %c0 to %n step %c1 {
    %w = hir.allreduce %x -> %o team [0, 1] op sum : !t -> !t
    hir.wait %w
  }
  hir.return %o : !t
}

// -----

// A dynamic extent is the same on every rank that holds the tensor; rank 1 does not.
// CHECK: verify_collective_order_errors.mlir:[[# @LINE + 7]]:3: error: 'scf.for' op communicates in its body, but its bounds may differ between ranks: they depend on the extent of %d, which rank 1 does not hold
!t = !fusion.tensor<f32[4], mesh=[0, 1]>
hir.program @extent_of_a_tensor_a_rank_lacks(%x: !t, %d: !fusion.tensor<f32[?], mesh=[0]>) -> !t {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %n = hir.extent %d axis 0 : !fusion.tensor<f32[?], mesh=[0]>
  %o = hir.allocate : !t
  scf.for %i = %c0 to %n step %c1 {
    %w = hir.allreduce %x -> %o team [0, 1] op sum : !t -> !t
    hir.wait %w
  }
  hir.return %o : !t
}

// -----

// A collective in a branch on a condition that may differ between ranks.
// CHECK: verify_collective_order_errors.mlir:[[# @LINE + 4]]:3: error: 'scf.if' op communicates in a branch, but its condition may differ between ranks: it depends on %first, an argument of @branch_on_an_argument
!t = !fusion.tensor<f32[4], mesh=[0, 1]>
hir.program @branch_on_an_argument(%x: !t, %first: i1) -> !t {
  %o = hir.allocate : !t
  scf.if %first {
    %w = hir.allreduce %x -> %o team [0, 1] op sum : !t -> !t
    hir.wait %w
  }
  hir.return %o : !t
}

// -----

// CHECK: verify_collective_order_errors.mlir:[[# @LINE + 7]]:3: error: 'scf.for' op has step 0: every rank fails when it reaches it
// VERIFIER: verify_collective_order_errors.mlir:[[# @LINE + 6]]:3: error: 'scf.for' op constant step operand must be positive
!t = !fusion.tensor<f32[4], mesh=[0, 1]>
hir.program @step_zero(%x: !t) -> !t {
  %c0 = arith.constant 0 : index
  %c4 = arith.constant 4 : index
  %o = hir.allocate : !t
  scf.for %i = %c0 to %c4 step %c0 {
    %w = hir.allreduce %x -> %o team [0, 1] op sum : !t -> !t
    hir.wait %w
  }
  hir.return %o : !t
}

// -----

// Below, `hir.team_position` makes the ranks take different branches of one program text.
// Different collectives on one team: rank 0 takes the first branch, rank 1 the second.
// CHECK: verify_collective_order_errors.mlir:[[# @LINE + 7]]:5: error: 'hir.allreduce' op ranks disagree: rank 0 posts 'hir.allreduce' on team [0, 1] where rank 1 posts 'hir.broadcast' at {{.*}}:[[# @LINE + 10]]:5
!t = !fusion.tensor<f32[4], mesh=[0, 1]>
hir.program @different_ops(%x: !t, %o: !t) {
  %c0 = arith.constant 0 : index
  %me = hir.team_position team [0, 1]
  %first = arith.cmpi eq, %me, %c0 : index
  scf.if %first {
    %w = hir.allreduce %x -> %o team [0, 1] op sum : !t -> !t
    hir.wait %w
  } else {
    %w = hir.broadcast %x -> %o team [0, 1] root 0 : !t -> !t
    hir.wait %w
  }
  hir.return
}

// -----

// CHECK: error: 'hir.broadcast' op ranks disagree on the root: rank 0 posts it with 0 where rank 1 posts 'hir.broadcast' at {{.*}}:[[# @LINE + 10]]:5 with 1
!t = !fusion.tensor<f32[4], mesh=[0, 1]>
hir.program @different_roots(%x: !t, %o: !t) {
  %c0 = arith.constant 0 : index
  %me = hir.team_position team [0, 1]
  %first = arith.cmpi eq, %me, %c0 : index
  scf.if %first {
    %w = hir.broadcast %x -> %o team [0, 1] root 0 : !t -> !t
    hir.wait %w
  } else {
    %w = hir.broadcast %x -> %o team [0, 1] root 1 : !t -> !t
    hir.wait %w
  }
  hir.return
}

// -----

// CHECK: error: 'hir.allreduce' op ranks disagree on the reduction: rank 0 posts it with sum where rank 1 posts 'hir.allreduce' at {{.*}} with max
!t = !fusion.tensor<f32[4], mesh=[0, 1]>
hir.program @different_reductions(%x: !t, %o: !t) {
  %c0 = arith.constant 0 : index
  %me = hir.team_position team [0, 1]
  %first = arith.cmpi eq, %me, %c0 : index
  scf.if %first {
    %w = hir.allreduce %x -> %o team [0, 1] op sum : !t -> !t
    hir.wait %w
  } else {
    %w = hir.allreduce %x -> %o team [0, 1] op max : !t -> !t
    hir.wait %w
  }
  hir.return
}

// -----

// CHECK: error: 'hir.allreduce' op ranks disagree on the element type: rank 0 posts it with f32 where rank 1 posts 'hir.allreduce' at {{.*}} with bf16
!t = !fusion.tensor<f32[4], mesh=[0, 1]>
!b = !fusion.tensor<bf16[4], mesh=[0, 1]>
hir.program @different_element_types(%x: !t, %o: !t, %xb: !b) {
  %c0 = arith.constant 0 : index
  %me = hir.team_position team [0, 1]
  %first = arith.cmpi eq, %me, %c0 : index
  scf.if %first {
    %w = hir.allreduce %x -> %o team [0, 1] op sum : !t -> !t
    hir.wait %w
  } else {
    %w = hir.allreduce %xb -> %xb team [0, 1] op sum : !b -> !b
    hir.wait %w
  }
  hir.return
}

// -----

// CHECK: error: 'hir.allreduce' op ranks disagree on the input size: rank 0 posts it with 4 elements where rank 1 posts 'hir.allreduce' at {{.*}} with 8 elements
!t = !fusion.tensor<f32[4], mesh=[0, 1]>
!t8 = !fusion.tensor<f32[8], mesh=[0, 1]>
hir.program @different_sizes(%x: !t, %o: !t, %x8: !t8) {
  %c0 = arith.constant 0 : index
  %me = hir.team_position team [0, 1]
  %first = arith.cmpi eq, %me, %c0 : index
  scf.if %first {
    %w = hir.allreduce %x -> %o team [0, 1] op sum : !t -> !t
    hir.wait %w
  } else {
    %w = hir.allreduce %x8 -> %x8 team [0, 1] op sum : !t8 -> !t8
    hir.wait %w
  }
  hir.return
}

// -----

// A copy-engine all-gather pairs only with itself (its flags are its own), and not with
// an NCCL one.
// CHECK: error: 'hir.allgather' op ranks disagree on the transport: rank 0 posts it with copy_engine where rank 1 posts 'hir.allgather' at {{.*}}:[[# @LINE + 12]]:5 with nccl
!shard = !fusion.tensor<f32[2 didx, 4], mesh=[0, 1]>
!gathered = !fusion.tensor<f32[2, 4], mesh=[0, 1]>
hir.program @different_transports(%a: !shard) {
  %g = hir.allocate symmetric : !gathered
  %c0 = arith.constant 0 : index
  %me = hir.team_position team [0, 1]
  %first = arith.cmpi eq, %me, %c0 : index
  scf.if %first {
    %w = hir.allgather %a -> %g team [0, 1] transport copy_engine : !shard -> !gathered
    hir.wait %w
  } else {
    %w = hir.allgather %a -> %g team [0, 1] : !shard -> !gathered
    hir.wait %w
  }
  hir.deallocate %g : !gathered
  hir.return
}

// -----

// CHECK: verify_collective_order_errors.mlir:[[# @LINE + 9]]:5: error: 'hir.allgather' op ranks disagree: rank 0 posts it where rank 1 posts 'hir.allgather' at {{.*}}:[[# @LINE + 12]]:5, but copy-engine collectives pair only with the same op
!shard = !fusion.tensor<f32[2 didx, 4], mesh=[0, 1]>
!gathered = !fusion.tensor<f32[2, 4], mesh=[0, 1]>
hir.program @two_copy_engine_allgathers(%a: !shard) {
  %g = hir.allocate symmetric : !gathered
  %c0 = arith.constant 0 : index
  %me = hir.team_position team [0, 1]
  %first = arith.cmpi eq, %me, %c0 : index
  scf.if %first {
    %w = hir.allgather %a -> %g team [0, 1] transport copy_engine : !shard -> !gathered
    hir.wait %w
  } else {
    %w = hir.allgather %a -> %g team [0, 1] transport copy_engine : !shard -> !gathered
    hir.wait %w
  }
  hir.deallocate %g : !gathered
  hir.return
}

// -----

// Ranks 0 and 3 (on the diagonal) reach the column all-reduce first, ranks 1 and 2 the row
// one: each waits for the next around the cycle 0 -> 2 -> 3 -> 1 -> 0.
// CHECK: verify_collective_order_errors.mlir:[[# @LINE + 7]]:5: error: 'hir.allreduce' op would wait forever: rank 0 posts it on team [0, 2], but rank 2 is waiting in 'hir.allreduce' at {{.*}}:[[# @LINE + 12]]:5
!t = !fusion.tensor<f32[4], mesh=[[0, 1], [2, 3]]>
hir.program @rows_and_columns_crossed(%x: !t, %o: !t) {
  %row = hir.team_position team [[0, 1], [2, 3]] along didy
  %column = hir.team_position team [[0, 1], [2, 3]] along didx
  %diagonal = arith.cmpi eq, %row, %column : index
  scf.if %diagonal {
    %wc = hir.allreduce %x -> %o team [[0, 1], [2, 3]] along didy op sum : !t -> !t
    hir.wait %wc
    %wr = hir.allreduce %o -> %x team [[0, 1], [2, 3]] along didx op sum : !t -> !t
    hir.wait %wr
  } else {
    %wr = hir.allreduce %x -> %o team [[0, 1], [2, 3]] along didx op sum : !t -> !t
    hir.wait %wr
    %wc = hir.allreduce %o -> %x team [[0, 1], [2, 3]] along didy op sum : !t -> !t
    hir.wait %wc
  }
  hir.return
}

// -----

// A rank-dependent trip count: rank 1 runs a second iteration whose allreduce has no partner.
// CHECK: verify_collective_order_errors.mlir:[[# @LINE + 8]]:5: error: 'hir.allreduce' op would wait forever (loop iteration 1): rank 1 posts it on team [0, 1], but rank 0 never posts it
!t = !fusion.tensor<f32[4], mesh=[0, 1]>
hir.program @rank_dependent_trip_count(%x: !t, %o: !t) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %me = hir.team_position team [0, 1]
  %n = arith.addi %me, %c1 : index
  scf.for %i = %c0 to %n step %c1 {
    %w = hir.allreduce %x -> %o team [0, 1] op sum : !t -> !t
    hir.wait %w
  }
  hir.return
}

// -----

// A loop too long to unroll is checked once: its bounds must agree between ranks.
// CHECK: verify_collective_order_errors.mlir:[[# @LINE + 8]]:3: error: 'scf.for' op ranks may disagree on it: rank 0 runs it with bounds 0 to 1000000000 step 1 where rank 1 runs it with bounds 0 to 1000000001 step 1
!t = !fusion.tensor<f32[4], mesh=[0, 1]>
hir.program @rank_dependent_long_loop(%x: !t, %o: !t) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %big = arith.constant 1000000000 : index
  %me = hir.team_position team [0, 1]
  %n = arith.addi %big, %me : index
  scf.for %i = %c0 to %n step %c1 {
    %w = hir.allreduce %x -> %o team [0, 1] op sum : !t -> !t
    hir.wait %w
  }
  hir.return
}

// -----

// A branch on a dynamic extent (the same on every rank) is checked for both outcomes; compared
// with the rank's position, the condition may differ between ranks.
// CHECK: verify_collective_order_errors.mlir:[[# @LINE + 7]]:3: error: 'scf.if' op ranks may disagree on it: rank 0 runs it with condition slt(extent(%d, 0), 0) where rank 1 runs it with condition slt(extent(%d, 0), 1)
!t = !fusion.tensor<f32[4], mesh=[0, 1]>
!d = !fusion.tensor<f32[?], mesh=[0, 1]>
hir.program @rank_dependent_condition(%x: !t, %o: !t, %d: !d) {
  %n = hir.extent %d axis 0 : !d
  %me = hir.team_position team [0, 1]
  %below = arith.cmpi slt, %n, %me : index
  scf.if %below {
    %w = hir.allreduce %x -> %o team [0, 1] op sum : !t -> !t
    hir.wait %w
  }
  hir.return
}

// -----

// A ring whose peers come from the rank's position: every rank sends first, so with NCCL
// every send waits for a receive that is never posted before it.
// CHECK: verify_collective_order_errors.mlir:[[# @LINE + 11]]:3: error: 'hir.send' op would wait forever: rank 0 sends 4 elements of f32 to rank 1, but rank 1 is waiting in 'hir.send' at {{.*}}:[[# @LINE + 11]]:3
!t = !fusion.tensor<f32[4], mesh=[0, 1, 2]>
hir.program @ring_everyone_sends_first(%x: !t, %o: !t) {
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %c3 = arith.constant 3 : index
  %me = hir.team_position team [0, 1, 2]
  %up = arith.addi %me, %c1 : index
  %next = arith.remui %up, %c3 : index
  %down = arith.addi %me, %c2 : index
  %prev = arith.remui %down, %c3 : index
  %s = hir.send %x, %next : !t
  %r = hir.recv %o, %prev : !t
  hir.wait %s
  hir.wait %r
  hir.return
}

// -----

// A peer computed from the index of a loop too long to unroll is unknown before the run.
// CHECK: error: 'hir.send' op cannot be verified: its peer on rank 0 is remui(the index of 'scf.for' at {{.*}}:[[# @LINE + 6]]:3, 2), unknown before the run
!t = !fusion.tensor<f32[4], mesh=[0]>
hir.program @peer_from_a_long_loop(%x: !t, %y: !fusion.tensor<f32[4], mesh=[1]>) {
  %c0 = arith.constant 0 : index
  %c2 = arith.constant 2 : index
  %big = arith.constant 1000000000 : index
  scf.for %i = %c0 to %big step %c2 {
    %peer = arith.remui %i, %c2 : index
    %w = hir.send %x, %peer : !t
    hir.wait %w
  }
  hir.return
}

// -----

// A peer carried across the iterations of a loop that is not unrolled.
// CHECK: error: 'hir.send' op cannot be verified: its peer on rank 0 depends on a value carried across the iterations of 'scf.for' at {{.*}}:[[# @LINE + 6]]:3
!t = !fusion.tensor<f32[4], mesh=[0]>
hir.program @peer_carried_by_a_long_loop(%x: !t, %y: !fusion.tensor<f32[4], mesh=[1]>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %big = arith.constant 1000000000 : index
  %last = scf.for %i = %c0 to %big step %c1 iter_args(%peer = %c1) -> (index) {
    %w = hir.send %x, %peer : !t
    hir.wait %w
    scf.yield %peer : index
  }
  hir.return
}

// -----

// A division by zero fails the run where it is reached: a peer computed by one is unknown.
// CHECK: error: 'hir.send' op cannot be verified: its peer on rank 0 depends on 'arith.divui' at {{.*}}:[[# @LINE + 5]]:3, a division by zero that fails the run
!t = !fusion.tensor<f32[4], mesh=[0]>
hir.program @peer_divided_by_zero(%x: !t, %y: !fusion.tensor<f32[4], mesh=[1]>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %peer = arith.divui %c1, %c0 : index
  %w = hir.send %x, %peer : !t
  hir.wait %w
  hir.return
}

// -----

// A copy-engine all-reduce reads every member's via buffer.
// CHECK: error: 'hir.allreduce' op rank 1 of team [0, 1] holds no via buffer (its mesh is [0]), so it cannot post it and rank(s) 0 would wait for it forever
!t = !fusion.tensor<f32[4], mesh=[0, 1]>
!slots = !fusion.tensor<f32[2, 4], mesh=[0]>
hir.program @member_without_via(%x: !t) -> !t {
  %o = hir.allocate : !t
  %v = hir.allocate symmetric : !slots
  %w = hir.allreduce %x -> %o via %v team [0, 1] op sum transport copy_engine : !t -> !t, !slots
  hir.wait %w
  hir.deallocate %v : !slots
  hir.return %o : !t
}

// -----

// CHECK: error: 'hir.allgather' op ranks disagree on the output size: rank 0 posts it with 8 elements where rank 1 posts 'hir.allgather' at {{.*}} with 16 elements
// VERIFIER: error: 'hir.allgather' op output has 16 elements, expected 8 (team of 2 x 4)
!x = !fusion.tensor<f32[2 didx, 4], mesh=[0, 1]>
!o = !fusion.tensor<f32[2, 4], mesh=[0, 1]>
!o16 = !fusion.tensor<f32[4, 4], mesh=[0, 1]>
hir.program @different_output_sizes(%x: !x, %o: !o, %o16: !o16) {
  %c0 = arith.constant 0 : index
  %me = hir.team_position team [0, 1]
  %first = arith.cmpi eq, %me, %c0 : index
  scf.if %first {
    %w = hir.allgather %x -> %o team [0, 1] : !x -> !o
    hir.wait %w
  } else {
    %w = hir.allgather %x -> %o16 team [0, 1] : !x -> !o16
    hir.wait %w
  }
  hir.return
}

// -----

// RUN: not hostir-opt %s --split-input-file -p 'verify-collective-order{world-size=0}' 2>&1 | filecheck %s --check-prefix=EMPTY
// EMPTY: {{^}}error: world-size must be at least 1, got 0
hir.program @empty_world() {
  hir.return
}
