// RUN: HOSTIR_ROUNDTRIP
// RUN: HOSTIR_GENERIC_ROUNDTRIP

// Every hir op in its custom syntax, in a host program with an scf.for stream loop.

// CHECK-LABEL: hir.program @main(%in: !fusion.tensor<f32[8, 4]>, %d: !fusion.tensor<f32[?, 4]>) -> !fusion.tensor<f32[8, 4]> {
hir.program @main(%in: !fusion.tensor<f32[8, 4]>, %d: !fusion.tensor<f32[?, 4]>) -> !fusion.tensor<f32[8, 4]> {
  // CHECK-NEXT: %buf = hir.allocate : !fusion.tensor<f32[8, 4]>
  %buf = hir.allocate : !fusion.tensor<f32[8, 4]>
  // CHECK-NEXT: %user = hir.get_current_stream
  %user = hir.get_current_stream
  // CHECK-NEXT: %n = hir.number_of_streams
  %n = hir.number_of_streams
  // CHECK-NEXT: %rows = hir.extent %d axis 0 : !fusion.tensor<f32[?, 4]>
  %rows = hir.extent %d axis 0 : !fusion.tensor<f32[?, 4]>
  // CHECK-NEXT: %like_d = hir.allocate(%rows) : !fusion.tensor<f32[?, 4]>
  %like_d = hir.allocate(%rows) : !fusion.tensor<f32[?, 4]>
  // CHECK-NEXT: %c0 = arith.constant 0 : index
  %c0 = arith.constant 0 : index
  // CHECK-NEXT: %c1 = arith.constant 1 : index
  %c1 = arith.constant 1 : index
  // CHECK-NEXT: %c8 = arith.constant 8 : index
  %c8 = arith.constant 8 : index
  // CHECK-NEXT: scf.for %i = %c0 to %c8 step %c1 {
  // CHECK-NEXT:   %key = arith.remsi %i, %n : index
  // CHECK-NEXT:   %worker = hir.stream %key
  // CHECK-NEXT:   hir.set_current_stream %worker
  // CHECK-NEXT:   hir.synchronize %user
  // CHECK-NEXT: }
  scf.for %i = %c0 to %c8 step %c1 {
    %key = arith.remsi %i, %n : index
    %worker = hir.stream %key
    hir.set_current_stream %worker
    hir.synchronize %user
  }
  // CHECK-NEXT: scf.for %i_1 = %c0 to %c8 step %c1 {
  // CHECK-NEXT:   %key_1 = arith.remsi %i_1, %n : index
  // CHECK-NEXT:   %worker_1 = hir.stream %key_1
  // CHECK-NEXT:   hir.set_current_stream %worker_1
  // CHECK-NEXT:   %in_slice = hir.alias_select %in[%i_1] axis 0 : !fusion.tensor<f32[8, 4]> -> !fusion.tensor<f32[4]>
  // CHECK-NEXT:   %buf_slice = hir.alias_select %buf[%i_1] axis 0 : !fusion.tensor<f32[8, 4]> -> !fusion.tensor<f32[4]>
  // CHECK-NEXT:   %copy = fusion.set %in_slice into %buf_slice : !fusion.tensor<f32[4]> -> !fusion.tensor<f32[4]>
  // CHECK-NEXT:   hir.set_current_stream %user
  // CHECK-NEXT:   hir.synchronize %worker_1
  // CHECK-NEXT: }
  scf.for %i = %c0 to %c8 step %c1 {
    %key = arith.remsi %i, %n : index
    %worker = hir.stream %key
    hir.set_current_stream %worker
    %in_slice = hir.alias_select %in[%i] axis 0 : !fusion.tensor<f32[8, 4]> -> !fusion.tensor<f32[4]>
    %buf_slice = hir.alias_select %buf[%i] axis 0 : !fusion.tensor<f32[8, 4]> -> !fusion.tensor<f32[4]>
    %copy = fusion.set %in_slice into %buf_slice : !fusion.tensor<f32[4]> -> !fusion.tensor<f32[4]>
    hir.set_current_stream %user
    hir.synchronize %worker
  }
  // CHECK-NEXT: %col = hir.alias_select %buf[%c1] axis 1 : !fusion.tensor<f32[8, 4]> -> !fusion.tensor<f32[8]>
  %col = hir.alias_select %buf[%c1] axis 1 : !fusion.tensor<f32[8, 4]> -> !fusion.tensor<f32[8]>
  // CHECK-NEXT: hir.deallocate %buf : !fusion.tensor<f32[8, 4]>
  hir.deallocate %buf : !fusion.tensor<f32[8, 4]>
  // CHECK-NEXT: hir.return %in : !fusion.tensor<f32[8, 4]>
  hir.return %in : !fusion.tensor<f32[8, 4]>
}

// Views of sharded, broadcast, split and reduction-carrying tensors.
// CHECK-LABEL: hir.program @views(
hir.program @views(%s: !fusion.tensor<f32[4 stream, 2 didx], mesh=[0, 1]>, %b: !fusion.tensor<f32[b1, 8]>, %r: !fusion.tensor<f32[4, 8, r2]>, %sp: !fusion.tensor<f32[8(2 didx, 4), 3], mesh=[0, 1]>) {
  %i = arith.constant 0 : index
  // CHECK: %v0 = hir.alias_select %s[%i] axis 0 : !fusion.tensor<f32[4 stream, 2 didx], mesh=[0, 1]> -> !fusion.tensor<f32[2 didx], mesh=[0, 1]>
  %v0 = hir.alias_select %s[%i] axis 0 : !fusion.tensor<f32[4 stream, 2 didx], mesh=[0, 1]> -> !fusion.tensor<f32[2 didx], mesh=[0, 1]>
  // CHECK-NEXT: %v1 = hir.alias_select %b[%i] axis 0 : !fusion.tensor<f32[b1, 8]> -> !fusion.tensor<f32[8]>
  %v1 = hir.alias_select %b[%i] axis 0 : !fusion.tensor<f32[b1, 8]> -> !fusion.tensor<f32[8]>
  // CHECK-NEXT: %v2 = hir.alias_select %r[%i] axis 1 : !fusion.tensor<f32[4, 8, r2]> -> !fusion.tensor<f32[4, r2]>
  %v2 = hir.alias_select %r[%i] axis 1 : !fusion.tensor<f32[4, 8, r2]> -> !fusion.tensor<f32[4, r2]>
  // CHECK-NEXT: %v3 = hir.alias_select %sp[%i] axis 1 : !fusion.tensor<f32[8(2 didx, 4), 3], mesh=[0, 1]> -> !fusion.tensor<f32[8(2 didx, 4)], mesh=[0, 1]>
  %v3 = hir.alias_select %sp[%i] axis 1 : !fusion.tensor<f32[8(2 didx, 4), 3], mesh=[0, 1]> -> !fusion.tensor<f32[8(2 didx, 4)], mesh=[0, 1]>
  // CHECK-NEXT: hir.return
  hir.return
}

// An all-reduce's output seen as the partial sums it reduces (the same elements on each rank).
// CHECK-LABEL: hir.program @partial_view(
hir.program @partial_view(%c: !fusion.tensor<bf16[r2, 8, 16], mesh=[0, 1]>) {
  // CHECK-NEXT: %p = hir.alias_as %c : !fusion.tensor<bf16[r2, 8, 16], mesh=[0, 1]> -> !fusion.tensor<bf16[2 didx, 8, 16, r4], mesh=[0, 1]>
  %p = hir.alias_as %c : !fusion.tensor<bf16[r2, 8, 16], mesh=[0, 1]> -> !fusion.tensor<bf16[2 didx, 8, 16, r4], mesh=[0, 1]>
  hir.return
}

// Chunks that keep their axis: block i of `parts` along an axis split by a Stream piece,
// of a dynamic extent, of a sharded tensor along an axis that is not, and along an axis that
// devices share inside its outer piece (each device's part of block i is block i of its part).
// CHECK-LABEL: hir.program @chunks(
hir.program @chunks(%t: !fusion.tensor<f32[12(3 stream, 4), 5]>, %d: !fusion.tensor<f32[?(3 stream, ?), 2]>, %sp: !fusion.tensor<f32[2 didx, 6(2 stream, 3)], mesh=[0, 1]>, %seq: !fusion.tensor<f32[16(2, 2 didx, 4)], mesh=[0, 1]>) {
  %i = arith.constant 1 : index
  // CHECK: %c0 = hir.alias_chunk %t[%i] axis 0 parts 3 : !fusion.tensor<f32[12(3 stream, 4), 5]> -> !fusion.tensor<f32[4, 5]>
  %c0 = hir.alias_chunk %t[%i] axis 0 parts 3 : !fusion.tensor<f32[12(3 stream, 4), 5]> -> !fusion.tensor<f32[4, 5]>
  // CHECK-NEXT: %c1 = hir.alias_chunk %d[%i] axis 0 parts 3 : !fusion.tensor<f32[?(3 stream, ?), 2]> -> !fusion.tensor<f32[?, 2]>
  %c1 = hir.alias_chunk %d[%i] axis 0 parts 3 : !fusion.tensor<f32[?(3 stream, ?), 2]> -> !fusion.tensor<f32[?, 2]>
  // CHECK-NEXT: %c2 = hir.alias_chunk %sp[%i] axis 1 parts 2 : !fusion.tensor<f32[2 didx, 6(2 stream, 3)], mesh=[0, 1]> -> !fusion.tensor<f32[2 didx, 3], mesh=[0, 1]>
  %c2 = hir.alias_chunk %sp[%i] axis 1 parts 2 : !fusion.tensor<f32[2 didx, 6(2 stream, 3)], mesh=[0, 1]> -> !fusion.tensor<f32[2 didx, 3], mesh=[0, 1]>
  // CHECK-NEXT: %c3 = hir.alias_chunk %seq[%i] axis 0 parts 2 : !fusion.tensor<f32[16(2, 2 didx, 4)], mesh=[0, 1]> -> !fusion.tensor<f32[8(2 didx, 4)], mesh=[0, 1]>
  %c3 = hir.alias_chunk %seq[%i] axis 0 parts 2 : !fusion.tensor<f32[16(2, 2 didx, 4)], mesh=[0, 1]> -> !fusion.tensor<f32[8(2 didx, 4)], mesh=[0, 1]>
  // CHECK-NEXT: hir.return
  hir.return
}

// CHECK-LABEL: fusion.func @unit(
fusion.func @unit(%a: !fusion.tensor<f32[8, 4]>, %b: !fusion.tensor<f32[8, 4]>) -> (!fusion.tensor<f32[8, 4]>, !fusion.tensor<f32[8, r4]>) {
  %c = fusion.add %a, %b : !fusion.tensor<f32[8, 4]>, !fusion.tensor<f32[8, 4]> -> !fusion.tensor<f32[8, 4]>
  %d = fusion.reduce sum %c dims [1] : !fusion.tensor<f32[8, 4]> -> !fusion.tensor<f32[8, r4]>
  fusion.return %c, %d : !fusion.tensor<f32[8, 4]>, !fusion.tensor<f32[8, r4]>
}
// CHECK-LABEL: fusion.func @nothing() {
fusion.func @nothing() {
  fusion.return
}
// CHECK-LABEL: hir.program @kernels(%a: !fusion.tensor<f32[8, 4]>) -> !fusion.tensor<f32[8, r4]> {
hir.program @kernels(%a: !fusion.tensor<f32[8, 4]>) -> !fusion.tensor<f32[8, r4]> {
  // CHECK-NEXT: %c, %d = hir.post_on_stream @unit(%a, %a) : (!fusion.tensor<f32[8, 4]>, !fusion.tensor<f32[8, 4]>) -> (!fusion.tensor<f32[8, 4]>, !fusion.tensor<f32[8, r4]>)
  %c, %d = hir.post_on_stream @unit(%a, %a) : (!fusion.tensor<f32[8, 4]>, !fusion.tensor<f32[8, 4]>) -> (!fusion.tensor<f32[8, 4]>, !fusion.tensor<f32[8, r4]>)
  // CHECK-NEXT: %oc = hir.allocate : !fusion.tensor<f32[8, 4]>
  // CHECK-NEXT: %od = hir.allocate : !fusion.tensor<f32[8, r4]>
  // CHECK-NEXT: %c2, %d2 = hir.post_on_stream @unit(%a, %c) outs(%oc, %od : !fusion.tensor<f32[8, 4]>, !fusion.tensor<f32[8, r4]>) : (!fusion.tensor<f32[8, 4]>, !fusion.tensor<f32[8, 4]>) -> (!fusion.tensor<f32[8, 4]>, !fusion.tensor<f32[8, r4]>)
  %oc = hir.allocate : !fusion.tensor<f32[8, 4]>
  %od = hir.allocate : !fusion.tensor<f32[8, r4]>
  %c2, %d2 = hir.post_on_stream @unit(%a, %c) outs(%oc, %od : !fusion.tensor<f32[8, 4]>, !fusion.tensor<f32[8, r4]>) : (!fusion.tensor<f32[8, 4]>, !fusion.tensor<f32[8, 4]>) -> (!fusion.tensor<f32[8, 4]>, !fusion.tensor<f32[8, r4]>)
  // CHECK-NEXT: hir.post_on_stream @nothing() : () -> ()
  hir.post_on_stream @nothing() : () -> ()
  // CHECK-NEXT: hir.return %d2 : !fusion.tensor<f32[8, r4]>
  hir.return %d2 : !fusion.tensor<f32[8, r4]>
}

// Every collective, with and without root / reduction kind / transport; send, recv, wait.
// CHECK-LABEL: hir.program @communication(
hir.program @communication(%x: !fusion.tensor<f32[4]>, %y: !fusion.tensor<f32[8]>, %peer: index) {
  // CHECK-NEXT: %ag = hir.allgather %x -> %y team [0, 1] : !fusion.tensor<f32[4]> -> !fusion.tensor<f32[8]>
  %ag = hir.allgather %x -> %y team [0, 1] : !fusion.tensor<f32[4]> -> !fusion.tensor<f32[8]>
  // CHECK-NEXT: hir.wait %ag
  hir.wait %ag
  // The default transport is not printed.
  // CHECK-NEXT: %ag_nccl = hir.allgather %x -> %y team [0, 1] : !fusion.tensor<f32[4]> -> !fusion.tensor<f32[8]>
  %ag_nccl = hir.allgather %x -> %y team [0, 1] transport nccl : !fusion.tensor<f32[4]> -> !fusion.tensor<f32[8]>
  // CHECK-NEXT: %ar = hir.allreduce %x -> %x team [0, 1] op sum : !fusion.tensor<f32[4]> -> !fusion.tensor<f32[4]>
  %ar = hir.allreduce %x -> %x team [0, 1] op sum : !fusion.tensor<f32[4]> -> !fusion.tensor<f32[4]>
  // CHECK-NEXT: %ar_max = hir.allreduce %x -> %x team [0, 1, 2, 3] op max : !fusion.tensor<f32[4]> -> !fusion.tensor<f32[4]>
  %ar_max = hir.allreduce %x -> %x team [0, 1, 2, 3] op max : !fusion.tensor<f32[4]> -> !fusion.tensor<f32[4]>
  // CHECK-NEXT: %rs = hir.reduce_scatter %y -> %x team [0, 1] op prod : !fusion.tensor<f32[8]> -> !fusion.tensor<f32[4]>
  %rs = hir.reduce_scatter %y -> %x team [0, 1] op prod : !fusion.tensor<f32[8]> -> !fusion.tensor<f32[4]>
  // CHECK-NEXT: %sc = hir.scatter %y -> %x team [0, 1] root 0 : !fusion.tensor<f32[8]> -> !fusion.tensor<f32[4]>
  %sc = hir.scatter %y -> %x team [0, 1] root 0 : !fusion.tensor<f32[8]> -> !fusion.tensor<f32[4]>
  // CHECK-NEXT: %ga = hir.gather %x -> %y team [0, 1] root 1 : !fusion.tensor<f32[4]> -> !fusion.tensor<f32[8]>
  %ga = hir.gather %x -> %y team [0, 1] root 1 : !fusion.tensor<f32[4]> -> !fusion.tensor<f32[8]>
  // CHECK-NEXT: %bc = hir.broadcast %x -> %x team [0, 1] root 1 : !fusion.tensor<f32[4]> -> !fusion.tensor<f32[4]>
  %bc = hir.broadcast %x -> %x team [0, 1] root 1 : !fusion.tensor<f32[4]> -> !fusion.tensor<f32[4]>
  // CHECK-NEXT: %rd = hir.reduce %x -> %x team [0, 1] root 0 op min : !fusion.tensor<f32[4]> -> !fusion.tensor<f32[4]>
  %rd = hir.reduce %x -> %x team [0, 1] root 0 op min : !fusion.tensor<f32[4]> -> !fusion.tensor<f32[4]>
  // CHECK-NEXT: %rd_team = hir.reduce %x -> %x team [2, 3] root 3 op sum : !fusion.tensor<f32[4]> -> !fusion.tensor<f32[4]>
  %rd_team = hir.reduce %x -> %x team [2, 3] root 3 op sum : !fusion.tensor<f32[4]> -> !fusion.tensor<f32[4]>
  // CHECK-NEXT: %sr = hir.send_recv %x -> %x team [0, 1] root 0 : !fusion.tensor<f32[4]> -> !fusion.tensor<f32[4]>
  %sr = hir.send_recv %x -> %x team [0, 1] root 0 : !fusion.tensor<f32[4]> -> !fusion.tensor<f32[4]>
  // A one-member team (sender == receiver: a local copy).
  // CHECK-NEXT: %sr_self = hir.send_recv %x -> %x team [1] root 1 : !fusion.tensor<f32[4]> -> !fusion.tensor<f32[4]>
  %sr_self = hir.send_recv %x -> %x team [1] root 1 : !fusion.tensor<f32[4]> -> !fusion.tensor<f32[4]>
  // CHECK-NEXT: %a2a = hir.all_to_all %y -> %y team [0, 1] : !fusion.tensor<f32[8]> -> !fusion.tensor<f32[8]>
  %a2a = hir.all_to_all %y -> %y team [0, 1] : !fusion.tensor<f32[8]> -> !fusion.tensor<f32[8]>
  // Each rank's row (along didx) or column (along didy) of a 2-D mesh; a root is a position in it.
  // CHECK-NEXT: %rows = hir.allreduce %x -> %x team [[0, ..., 7], ..., [56, ..., 63]] along didx op sum : !fusion.tensor<f32[4]> -> !fusion.tensor<f32[4]>
  %rows = hir.allreduce %x -> %x team [[0, 1, 2, 3, 4, 5, 6, 7], ..., [56, ..., 63]] along didx op sum : !fusion.tensor<f32[4]> -> !fusion.tensor<f32[4]>
  // CHECK-NEXT: %columns = hir.scatter %y -> %x team [[0, 1], [2, 3]] along didy root 0 : !fusion.tensor<f32[8]> -> !fusion.tensor<f32[4]>
  %columns = hir.scatter %y -> %x team [[0, 1], [2, 3]] along didy root 0 : !fusion.tensor<f32[8]> -> !fusion.tensor<f32[4]>
  // CHECK-NEXT: %wide = hir.allreduce %x -> %x team [0, ..., 1023] op sum : !fusion.tensor<f32[4]> -> !fusion.tensor<f32[4]>
  %wide = hir.allreduce %x -> %x team [0, ..., 1023] op sum : !fusion.tensor<f32[4]> -> !fusion.tensor<f32[4]>
  // A rotation by a run-time offset.
  // CHECK-NEXT: %sh = hir.shift %x -> %x team [2, 0, 1] offset %peer : !fusion.tensor<f32[4]> -> !fusion.tensor<f32[4]>
  %sh = hir.shift %x -> %x team [2, 0, 1] offset %peer : !fusion.tensor<f32[4]> -> !fusion.tensor<f32[4]>
  // The default transport is not printed.
  // CHECK-NEXT: %sh_nccl = hir.shift %x -> %x team [0, 1] offset %peer : !fusion.tensor<f32[4]> -> !fusion.tensor<f32[4]>
  %sh_nccl = hir.shift %x -> %x team [0, 1] offset %peer transport nccl : !fusion.tensor<f32[4]> -> !fusion.tensor<f32[4]>
  // CHECK-NEXT: %snd = hir.send %x, %peer : !fusion.tensor<f32[4]>
  %snd = hir.send %x, %peer : !fusion.tensor<f32[4]>
  // CHECK-NEXT: %rcv = hir.recv %x, %peer : !fusion.tensor<f32[4]>
  %rcv = hir.recv %x, %peer : !fusion.tensor<f32[4]>
  // Every work token is waited (the verifier requires it).
  // CHECK-NEXT: hir.wait %ag_nccl
  hir.wait %ag_nccl
  // CHECK-NEXT: hir.wait %ar
  hir.wait %ar
  // CHECK-NEXT: hir.wait %ar_max
  hir.wait %ar_max
  // CHECK-NEXT: hir.wait %rs
  hir.wait %rs
  // CHECK-NEXT: hir.wait %sc
  hir.wait %sc
  // CHECK-NEXT: hir.wait %ga
  hir.wait %ga
  // CHECK-NEXT: hir.wait %bc
  hir.wait %bc
  // CHECK-NEXT: hir.wait %rd
  hir.wait %rd
  // CHECK-NEXT: hir.wait %rd_team
  hir.wait %rd_team
  // CHECK-NEXT: hir.wait %sr
  hir.wait %sr
  // CHECK-NEXT: hir.wait %sr_self
  hir.wait %sr_self
  // CHECK-NEXT: hir.wait %a2a
  hir.wait %a2a
  // CHECK-NEXT: hir.wait %rows
  hir.wait %rows
  // CHECK-NEXT: hir.wait %columns
  hir.wait %columns
  // CHECK-NEXT: hir.wait %wide
  hir.wait %wide
  // CHECK-NEXT: hir.wait %sh
  hir.wait %sh
  // CHECK-NEXT: hir.wait %sh_nccl
  hir.wait %sh_nccl
  // CHECK-NEXT: hir.wait %snd
  hir.wait %snd
  // CHECK-NEXT: hir.wait %rcv
  hir.wait %rcv
  // CHECK-NEXT: hir.return
  hir.return
}

// A local shard: each member of the team keeps its part of its own (replicated) input.
// CHECK-LABEL: hir.program @local_shard(
hir.program @local_shard(%x: !fusion.tensor<f32[4, ?], mesh=[[0, 1], [2, 3]]>, %y: !fusion.tensor<f32[4(2 didx, 2), ?], mesh=[[0, 1], [2, 3]]>) {
  // CHECK-NEXT: hir.local_shard %x -> %y axis 0 team [0, 1] : !fusion.tensor<f32[4, ?], mesh=[[0, 1], [2, 3]]> -> !fusion.tensor<f32[4(2 didx, 2), ?], mesh=[[0, 1], [2, 3]]>
  hir.local_shard %x -> %y axis 0 team [0, 1] : !fusion.tensor<f32[4, ?], mesh=[[0, 1], [2, 3]]> -> !fusion.tensor<f32[4(2 didx, 2), ?], mesh=[[0, 1], [2, 3]]>
  // CHECK-NEXT: hir.local_shard %x -> %y axis 0 team [2, 3]
  hir.local_shard %x -> %y axis 0 team [2, 3] : !fusion.tensor<f32[4, ?], mesh=[[0, 1], [2, 3]]> -> !fusion.tensor<f32[4(2 didx, 2), ?], mesh=[[0, 1], [2, 3]]>
  hir.return
}

// The copy-engine transport: symmetric buffers, `via` buffers, waits for one member, an
// all-gather that leaves the own slot alone and a view of this rank's own shard.
!shard = !fusion.tensor<bf16[2 didx, 4, 8], mesh=[0, 1]>
!gathered = !fusion.tensor<bf16[2, 4, 8], mesh=[0, 1]>
!partial = !fusion.tensor<f32[2, 4], mesh=[0, 1]>
!scattered = !fusion.tensor<f32[2 didx, 4], mesh=[0, 1]>
!slots = !fusion.tensor<f32[2, 2, 4], mesh=[0, 1]>
// CHECK-LABEL: hir.program @copy_engine(
hir.program @copy_engine(%a: !shard, %u: !partial) -> (!gathered, !scattered, !partial) {
  // CHECK-NEXT: %g = hir.allocate symmetric : !fusion.tensor<bf16[2, 4, 8], mesh=[0, 1]>
  %g = hir.allocate symmetric : !gathered
  %r = hir.allocate symmetric : !partial
  %v = hir.allocate symmetric : !slots
  %c = hir.allocate : !scattered
  %o = hir.allocate : !partial
  // CHECK: %me = hir.team_position team [0, 1]
  %me = hir.team_position team [0, 1]
  // CHECK-NEXT: %w = hir.allgather %a -> %g team [0, 1] transport copy_engine : !fusion.tensor<bf16[2 didx, 4, 8], mesh=[0, 1]> -> !fusion.tensor<bf16[2, 4, 8], mesh=[0, 1]>
  %w = hir.allgather %a -> %g team [0, 1] transport copy_engine : !shard -> !gathered
  // CHECK-NEXT: hir.wait %w from %me
  hir.wait %w from %me
  // CHECK-NEXT: hir.wait %w
  hir.wait %w
  // CHECK-NEXT: %w1 = hir.allgather %a -> %g team [0, 1] transport copy_engine peers_only : !fusion.tensor<bf16[2 didx, 4, 8], mesh=[0, 1]> -> !fusion.tensor<bf16[2, 4, 8], mesh=[0, 1]>
  %w1 = hir.allgather %a -> %g team [0, 1] transport copy_engine peers_only : !shard -> !gathered
  // CHECK-NEXT: %own = hir.alias_select %a[%me] axis 0 : !fusion.tensor<bf16[2 didx, 4, 8], mesh=[0, 1]> -> !fusion.tensor<bf16[4, 8], mesh=[0, 1]>
  %own = hir.alias_select %a[%me] axis 0 : !shard -> !fusion.tensor<bf16[4, 8], mesh=[0, 1]>
  // CHECK-NEXT: hir.wait %w1
  hir.wait %w1
  // CHECK-NEXT: %w2 = hir.reduce_scatter %u -> %c via %r team [0, 1] op sum transport copy_engine : !fusion.tensor<f32[2, 4], mesh=[0, 1]> -> !fusion.tensor<f32[2 didx, 4], mesh=[0, 1]>, !fusion.tensor<f32[2, 4], mesh=[0, 1]>
  %w2 = hir.reduce_scatter %u -> %c via %r team [0, 1] op sum transport copy_engine : !partial -> !scattered, !partial
  hir.wait %w2
  // CHECK: %w3 = hir.allreduce %u -> %o via %v team [0, 1] op max transport copy_engine : !fusion.tensor<f32[2, 4], mesh=[0, 1]> -> !fusion.tensor<f32[2, 4], mesh=[0, 1]>, !fusion.tensor<f32[2, 2, 4], mesh=[0, 1]>
  %w3 = hir.allreduce %u -> %o via %v team [0, 1] op max transport copy_engine : !partial -> !partial, !slots
  hir.wait %w3
  hir.return %g, %c, %o : !gathered, !scattered, !partial
}

// A copy-engine all-reduce whose own part is a product it computes (`own`: the matmul's operands).
// CHECK-LABEL: hir.program @allreduce_own_product(
hir.program @allreduce_own_product(%x: !fusion.tensor<f32[8, 3]>, %a: !fusion.tensor<f32[4, 2]>, %b: !fusion.tensor<f32[2, 3]>, %v: !fusion.tensor<f32[48]>) {
  // CHECK-NEXT: %w = hir.allreduce %x -> %x via %v own(%a, %b : !fusion.tensor<f32[4, 2]>, !fusion.tensor<f32[2, 3]>) team [0, 1] op sum transport copy_engine : !fusion.tensor<f32[8, 3]> -> !fusion.tensor<f32[8, 3]>, !fusion.tensor<f32[48]>
  %w = hir.allreduce %x -> %x via %v own(%a, %b : !fusion.tensor<f32[4, 2]>, !fusion.tensor<f32[2, 3]>) team [0, 1] op sum transport copy_engine : !fusion.tensor<f32[8, 3]> -> !fusion.tensor<f32[8, 3]>, !fusion.tensor<f32[48]>
  // CHECK-NEXT: hir.wait %w
  hir.wait %w
  hir.return
}

// A copy-engine reduce-scatter computes its own part onto the peer's the same way.
// CHECK-LABEL: hir.program @reduce_scatter_own_product(
hir.program @reduce_scatter_own_product(%x: !fusion.tensor<f32[8, 3], mesh=[0, 1]>, %a: !fusion.tensor<f32[4, 2], mesh=[0, 1]>, %b: !fusion.tensor<f32[2, 3], mesh=[0, 1]>) {
  %out = hir.allocate symmetric : !fusion.tensor<f32[4, 3], mesh=[0, 1]>
  // CHECK: %w = hir.reduce_scatter %x -> %out own(%a, %b : !fusion.tensor<f32[4, 2], mesh=[0, 1]>, !fusion.tensor<f32[2, 3], mesh=[0, 1]>) team [0, 1] op sum transport copy_engine : !fusion.tensor<f32[8, 3], mesh=[0, 1]> -> !fusion.tensor<f32[4, 3], mesh=[0, 1]>
  %w = hir.reduce_scatter %x -> %out own(%a, %b : !fusion.tensor<f32[4, 2], mesh=[0, 1]>, !fusion.tensor<f32[2, 3], mesh=[0, 1]>) team [0, 1] op sum transport copy_engine : !fusion.tensor<f32[8, 3], mesh=[0, 1]> -> !fusion.tensor<f32[4, 3], mesh=[0, 1]>
  hir.wait %w
  hir.return
}

// With a symmetric output on a team of two, the peer pushes its chunk into the output,
// where the own product adds onto it: no via buffer.
// CHECK-LABEL: hir.program @allreduce_own_product_into_symmetric_output(
hir.program @allreduce_own_product_into_symmetric_output(%x: !fusion.tensor<f32[8, 3], mesh=[0, 1]>, %a: !fusion.tensor<f32[4, 2], mesh=[0, 1]>, %b: !fusion.tensor<f32[2, 3], mesh=[0, 1]>) {
  %out = hir.allocate symmetric : !fusion.tensor<f32[8, 3], mesh=[0, 1]>
  // CHECK: %w = hir.allreduce %x -> %out own(%a, %b : !fusion.tensor<f32[4, 2], mesh=[0, 1]>, !fusion.tensor<f32[2, 3], mesh=[0, 1]>) team [0, 1] op sum transport copy_engine : !fusion.tensor<f32[8, 3], mesh=[0, 1]> -> !fusion.tensor<f32[8, 3], mesh=[0, 1]>
  %w = hir.allreduce %x -> %out own(%a, %b : !fusion.tensor<f32[4, 2], mesh=[0, 1]>, !fusion.tensor<f32[2, 3], mesh=[0, 1]>) team [0, 1] op sum transport copy_engine : !fusion.tensor<f32[8, 3], mesh=[0, 1]> -> !fusion.tensor<f32[8, 3], mesh=[0, 1]>
  hir.wait %w
  hir.return
}
