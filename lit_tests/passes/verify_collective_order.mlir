// Programs whose ranks agree on every collective and transfer: the pass leaves them as they are.
// RUN: hostir-opt %s --split-input-file -p verify-collective-order | filecheck %s

// A pairwise exchange ordered so that the ends meet: rank 0 sends first, rank 1 receives first.
// CHECK-LABEL: hir.program @exchange(
!on0 = !fusion.tensor<f32[4], mesh=[0]>
!on1 = !fusion.tensor<f32[4], mesh=[1]>
hir.program @exchange(%a: !on0, %b: !on1) -> (!on0, !on1) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %ra = hir.allocate : !on0
  %rb = hir.allocate : !on1
  %s0 = hir.send %a, %c1 : !on0
  %r1 = hir.recv %rb, %c0 : !on1
  %r0 = hir.recv %ra, %c1 : !on0
  %s1 = hir.send %b, %c0 : !on1
  hir.wait %s0
  hir.wait %r1
  hir.wait %r0
  hir.wait %s1
  hir.return %ra, %rb : !on0, !on1
}

// -----

// Collectives of the two rows of a 2-D mesh, then of its columns: each rank posts the two
// of its row and column, in the same order as its partners.
// CHECK-LABEL: hir.program @rows_then_columns(
!t = !fusion.tensor<f32[4], mesh=[[0, 1], [2, 3]]>
hir.program @rows_then_columns(%x: !t) -> !t {
  %o = hir.allocate : !t
  %w0 = hir.allreduce %x -> %o team [0, 1] op sum : !t -> !t
  %w1 = hir.allreduce %x -> %o team [2, 3] op sum : !t -> !t
  %w2 = hir.allreduce %o -> %x team [0, 2] op max : !t -> !t
  %w3 = hir.allreduce %o -> %x team [1, 3] op max : !t -> !t
  hir.wait %w0
  hir.wait %w1
  hir.wait %w2
  hir.wait %w3
  hir.return %x : !t
}

// -----

// The same with teams along the mesh axes, one op each (each rank's row, then its column),
// and one rank's row leading the other's by an all-gather of its own before them.
// CHECK-LABEL: hir.program @sliced_rows_then_columns(
!t = !fusion.tensor<f32[4], mesh=[[0, 1], [2, 3]]>
!g = !fusion.tensor<f32[8], mesh=[[0, 1], [2, 3]]>
hir.program @sliced_rows_then_columns(%x: !t, %first: !fusion.tensor<f32[4], mesh=[0, 1]>, %y: !fusion.tensor<f32[8], mesh=[0, 1]>) -> !t {
  %o = hir.allocate : !t
  %w = hir.allgather %first -> %y team [0, 1] : !fusion.tensor<f32[4], mesh=[0, 1]> -> !fusion.tensor<f32[8], mesh=[0, 1]>
  %w0 = hir.allreduce %x -> %o team [[0, 1], [2, 3]] along didx op sum : !t -> !t
  %w2 = hir.allreduce %o -> %x team [[0, 1], [2, 3]] along didy op max : !t -> !t
  hir.wait %w
  hir.wait %w0
  hir.wait %w2
  hir.return %x : !t
}

// -----

// A root that holds no input and a member without an output still post a gather
// (the runtime sends zeros and gathers into scratch).
// CHECK-LABEL: hir.program @gather_without_buffers(
!in = !fusion.tensor<f32[3], mesh=[1, 2]>
!out = !fusion.tensor<f32[2, 3], mesh=[0]>
hir.program @gather_without_buffers(%x: !in) -> !out {
  %o = hir.allocate : !out
  %w = hir.gather %x -> %o team [1, 2, 0] root 0 : !in -> !out
  hir.wait %w
  hir.return %o : !out
}

// -----

// A loop whose trip count is a dynamic extent: the same on every rank, unknown before the
// run. Its body is checked once, for any iteration; so is a branch on that extent.
// CHECK-LABEL: hir.program @dynamic_trip_count(
!d = !fusion.tensor<f32[?, 4], mesh=[0, 1]>
!t = !fusion.tensor<f32[4], mesh=[0, 1]>
hir.program @dynamic_trip_count(%x: !d, %y: !t) -> !t {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  %n = hir.extent %x axis 0 : !d
  %o = hir.allocate : !t
  scf.for %i = %c0 to %n step %c1 {
    %w = hir.allreduce %y -> %o team [0, 1] op sum : !t -> !t
    hir.wait %w
  }
  %long = arith.cmpi sgt, %n, %c4 : index
  scf.if %long {
    %w = hir.broadcast %o -> %y team [0, 1] root 1 : !t -> !t
    hir.wait %w
  } else {
    %w = hir.allgather %o -> %y team [0] : !t -> !t
    hir.wait %w
  }
  hir.return %o : !t
}

// -----

// A loop too long to unroll is checked once, for any iteration.
// CHECK-LABEL: hir.program @long_loop(
!t = !fusion.tensor<f32[4], mesh=[0, 1]>
hir.program @long_loop(%x: !t) -> !t {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %big = arith.constant 1000000000 : index
  %o = hir.allocate : !t
  scf.for %i = %c0 to %big step %c1 {
    %w = hir.allreduce %x -> %o team [0, 1] op sum : !t -> !t
    hir.wait %w
  }
  hir.return %o : !t
}

// -----

// Peers computed from the index of an unrolled loop: in iteration i rank 0 sends its
// buffer to rank i + 1, and each receiver posts its receive from rank 0.
// CHECK-LABEL: hir.program @fan_out(
!on0 = !fusion.tensor<f32[4], mesh=[0]>
!others = !fusion.tensor<f32[4], mesh=[1, 2]>
hir.program @fan_out(%a: !on0) -> !others {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %r = hir.allocate : !others
  scf.for %i = %c0 to %c2 step %c1 {
    %peer = arith.addi %i, %c1 : index
    %s = hir.send %a, %peer : !on0
    hir.wait %s
  }
  %w = hir.recv %r, %c0 : !others
  hir.wait %w
  hir.return %r : !others
}
