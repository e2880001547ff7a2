// RUN: hostir-opt %s --split-input-file -p 'convert-op-to-communication{transport=copy-engine symmetric-allreduce-output=false}' --verify-diagnostics | filecheck %s
// RUN: hostir-opt %s --split-input-file -p 'convert-op-to-communication{transport=auto}' | filecheck %s --check-prefix=AUTO
// RUN: hostir-opt %s --split-input-file -p 'convert-op-to-communication{transport=copy-engine}' --verify-diagnostics | filecheck %s --check-prefix=SYM

// The copy-engine transport (docs/copy_engine.md): an all-gather in a stream loop writes
// into a view of the gathered buffer, which becomes symmetric.
!a = !fusion.tensor<f32[4, 2 didx, 2, 8], mesh=[0, 1]>
!a_i = !fusion.tensor<f32[2 didx, 2, 8], mesh=[0, 1]>
!g = !fusion.tensor<f32[4 stream, 2, 2, 8], mesh=[0, 1]>
!g_i = !fusion.tensor<f32[2, 2, 8], mesh=[0, 1]>
hir.program @allgather_in_loop(%a: !a) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  %g = hir.allocate : !g
  scf.for %i = %c0 to %c4 step %c1 {
    %a_i = hir.alias_select %a[%i] axis 0 : !a -> !a_i
    %g_i = hir.alias_select %g[%i] axis 0 : !g -> !g_i
    %r = fusion.set %a_i into %g_i : !a_i -> !g_i
  }
  hir.deallocate %g : !g
  hir.return
}
// CHECK-LABEL: hir.program @allgather_in_loop
// CHECK:         %g = hir.allocate symmetric : !fusion.tensor<f32[4 stream, 2, 2, 8], mesh=[0, 1]>
// CHECK:           %w = hir.allgather %a_i -> %g_i team [0, 1] transport copy_engine : !fusion.tensor<f32[2 didx, 2, 8], mesh=[0, 1]> -> !fusion.tensor<f32[2, 2, 8], mesh=[0, 1]>
// CHECK-NEXT:      hir.wait %w
// AUTO-LABEL: hir.program @allgather_in_loop
// AUTO:         %g = hir.allocate symmetric
// AUTO:           hir.allgather {{.*}} transport copy_engine

// -----

// An all-gather whose output is allocated in its loop (bounded-intermediates, or a set
// without destination): a symmetric buffer is acquired from the peers, not from an
// allocator, so the next iteration (on another stream) would overwrite the chunk this one
// still reads. It becomes one symmetric buffer before the loop, a slice per iteration,
// released after the loop (issue 25: a wrong answer on GPUs).
!a = !fusion.tensor<f32[4, 2 didx, 2, 8], mesh=[0, 1], alloc=[0, 1, 3, 2]>
!a_i = !fusion.tensor<f32[2 didx, 2, 8], mesh=[0, 1], alloc=[0, 2, 1]>
!g_i = !fusion.tensor<f32[2, 2, 8], mesh=[0, 1], alloc=[0, 2, 1]>
hir.program @allgather_into_loop_allocation(%a: !a) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  scf.for %i = %c0 to %c4 step %c1 {
    %a_i = hir.alias_select %a[%i] axis 0 : !a -> !a_i
    %g_i = hir.allocate : !g_i
    %r = fusion.set %a_i into %g_i : !a_i -> !g_i
    hir.deallocate %g_i : !g_i
  }
  scf.for %i = %c0 to %c4 step %c1 {
    %a_i = hir.alias_select %a[%i] axis 0 : !a -> !a_i
    %r = fusion.set %a_i : !a_i -> !g_i
  }
  hir.return
}
// CHECK-LABEL: hir.program @allgather_into_loop_allocation
// CHECK:         %gathered = hir.allocate symmetric : !fusion.tensor<f32[4, 2, 2, 8], mesh=[0, 1], alloc=[0, 1, 3, 2]>
// CHECK-NEXT:    scf.for %[[I:.*]] = %c0 to %c4 step %c1 {
// CHECK-NEXT:      %a_i = hir.alias_select %a[%[[I]]] axis 0
// CHECK-NEXT:      %gathered_i = hir.alias_select %gathered[%[[I]]] axis 0 : !fusion.tensor<f32[4, 2, 2, 8], mesh=[0, 1], alloc=[0, 1, 3, 2]> -> !fusion.tensor<f32[2, 2, 8], mesh=[0, 1], alloc=[0, 2, 1]>
// CHECK-NEXT:      %w = hir.allgather %a_i -> %gathered_i team [0, 1] transport copy_engine
// CHECK-NEXT:      hir.wait %w
// CHECK-NEXT:    }
// CHECK:         %gathered_1 = hir.allocate symmetric : !fusion.tensor<f32[4, 2, 2, 8], mesh=[0, 1], alloc=[0, 1, 3, 2]>
// CHECK-NEXT:    scf.for %[[J:.*]] = %c0 to %c4 step %c1 {
// CHECK-NEXT:      %a_i_1 = hir.alias_select %a[%[[J]]] axis 0
// CHECK-NEXT:      %gathered_i_1 = hir.alias_select %gathered_1[%[[J]]] axis 0
// CHECK-NEXT:      %w_1 = hir.allgather %a_i_1 -> %gathered_i_1 team [0, 1] transport copy_engine
// CHECK-NEXT:      hir.wait %w_1
// CHECK-NEXT:    }
// AUTO-LABEL: hir.program @allgather_into_loop_allocation
// AUTO:         hir.allocate symmetric : !fusion.tensor<f32[4, 2, 2, 8], mesh=[0, 1], alloc=[0, 1, 3, 2]>
// AUTO-NOT:     hir.allocate symmetric : !fusion.tensor<f32[2, 2, 8]

// -----

// A reduce-scatter in a loop: its contributions arrive in a symmetric via buffer
// allocated before the loop, one slice per iteration.
!u = !fusion.tensor<f32[4, 2 didx, 2, 8], mesh=[0, 1]>
!u_i = !fusion.tensor<f32[2 didx, 2, 8], mesh=[0, 1]>
!c = !fusion.tensor<f32[4 stream, r2, 2 didx, 8], mesh=[0, 1]>
!c_i = !fusion.tensor<f32[r2, 2 didx, 8], mesh=[0, 1]>
hir.program @reduce_scatter_in_loop(%u: !u) -> !c {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  %c = hir.allocate : !c
  scf.for %i = %c0 to %c4 step %c1 {
    %u_i = hir.alias_select %u[%i] axis 0 : !u -> !u_i
    %c_i = hir.alias_select %c[%i] axis 0 : !c -> !c_i
    %r = fusion.reduce sum %u_i dims [0] into %c_i : !u_i -> !c_i
  }
  hir.return %c : !c
}
// CHECK-LABEL: hir.program @reduce_scatter_in_loop
// CHECK:         %via = hir.allocate symmetric : !fusion.tensor<f32[4, 2 didx, 2, 8], mesh=[0, 1]>
// CHECK-NEXT:    scf.for %[[I:.*]] = %c0 to %c4 step %c1 {
// CHECK:           %via_i = hir.alias_select %via[%[[I]]] axis 0 : !fusion.tensor<f32[4, 2 didx, 2, 8], mesh=[0, 1]> -> !fusion.tensor<f32[2 didx, 2, 8], mesh=[0, 1]>
// CHECK-NEXT:      %w = hir.reduce_scatter %u_i -> %c_i via %via_i team [0, 1] op sum transport copy_engine : !fusion.tensor<f32[2 didx, 2, 8], mesh=[0, 1]> -> !fusion.tensor<f32[r2, 2 didx, 8], mesh=[0, 1]>, !fusion.tensor<f32[2 didx, 2, 8], mesh=[0, 1]>
// CHECK-NEXT:      hir.wait %w

// -----

// An all-reduce at the top level: a via buffer of twice the input (the members' input
// chunks, then their reduced chunks).
!p = !fusion.tensor<f32[2 didx, 8], mesh=[0, 1]>
!s = !fusion.tensor<f32[r2 didx, 8], mesh=[0, 1]>
hir.program @allreduce(%p: !p) -> !s {
  %s = fusion.reduce sum %p dims [0] : !p -> !s
  hir.return %s : !s
}
// CHECK-LABEL: hir.program @allreduce
// CHECK-NEXT:    %via = hir.allocate symmetric : !fusion.tensor<f32[2, 2 didx, 8], mesh=[0, 1]>
// CHECK-NEXT:    %s = hir.allocate : !fusion.tensor<f32[r2 didx, 8], mesh=[0, 1]>
// CHECK-NEXT:    %w = hir.allreduce %p -> %s via %via team [0, 1] op sum transport copy_engine

// With symmetric-allreduce-output (the default; the CHECK lines above are without it), the
// output becomes symmetric, and the members push their reduced chunks straight into each other's outputs; the via buffer receives the input
// chunks only. A returned output is a result the peers write into (its instance is agreed
// each run, runtime/result_sets.py); an intermediate one is released when it dies.
// SYM-LABEL: hir.program @allreduce
// SYM-NEXT:    %s = hir.allocate symmetric : !fusion.tensor<f32[r2 didx, 8], mesh=[0, 1]>
// SYM-NEXT:    %via = hir.allocate symmetric : !fusion.tensor<f32[2 didx, 8], mesh=[0, 1]>
// SYM-NEXT:    %w = hir.allreduce %p -> %s via %via team [0, 1] op sum transport copy_engine
// SYM-NEXT:    hir.wait %w
// SYM-NEXT:    hir.return %s
// SYM-LABEL: hir.program @allreduce_intermediate
// SYM-NEXT:    %s = hir.allocate symmetric : !fusion.tensor<f32[r2 didx, 8], mesh=[0, 1]>
// SYM-NEXT:    %via = hir.allocate symmetric : !fusion.tensor<f32[2 didx, 8], mesh=[0, 1]>
// SYM-NEXT:    %w = hir.allreduce %p -> %s via %via team [0, 1] op sum transport copy_engine
// SYM-NEXT:    hir.wait %w
// SYM-NEXT:    %t = fusion.neg %s
!t = !fusion.tensor<f32[8], mesh=[0, 1]>
hir.program @allreduce_intermediate(%p: !p) -> !t {
  %s = fusion.reduce sum %p dims [0] : !p -> !s
  %t = fusion.neg %s : !s -> !t
  hir.return %t : !t
}

// -----

// Refused with copy-engine, NCCL with auto: an all-gather whose output the program
// returns (a symmetric buffer is reused by every run; the caller keeps the output).
!x = !fusion.tensor<f32[2 didx, 8], mesh=[0, 1]>
!y = !fusion.tensor<f32[2, 8], mesh=[0, 1]>
hir.program @allgather_output(%x: !x) -> !y {
  %y = fusion.set %x : !x -> !y
  hir.return %y : !y
}
// CHECK: convert_op_to_communication_copy_engine.mlir:[[# @LINE - 3]]:3: error: 'fusion.set' op cannot communicate on the copy engines: its output is a program output
// AUTO-LABEL: hir.program @allgather_output
// AUTO:         %w = hir.allgather %x -> %y team [0, 1] : !fusion.tensor<f32[2 didx, 8], mesh=[0, 1]> -> !fusion.tensor<f32[2, 8], mesh=[0, 1]>

// -----

// Refused with copy-engine, NCCL with auto: an all-gather of a device-parallel axis of
// dynamic extent (one element per member: a static input) into a dynamic output, which
// a symmetric buffer, sized when the program is compiled, cannot hold.
!x = !fusion.tensor<f32[? didx, 8], mesh=[0, 1]>
!y = !fusion.tensor<f32[?, 8], mesh=[0, 1]>
hir.program @allgather_dynamic(%x: !x) -> !y {
  %y = fusion.set %x : !x -> !y
  %z = fusion.neg %y : !y -> !y
  hir.return %z : !y
}
// CHECK: convert_op_to_communication_copy_engine.mlir:[[# @LINE - 4]]:3: error: 'fusion.set' op cannot communicate on the copy engines: its output's shape must be static (symmetric buffers are sized when the program is lowered)
// AUTO-LABEL: hir.program @allgather_dynamic
// AUTO:         %w = hir.allgather %x -> %y team [0, 1] : !fusion.tensor<f32[? didx, 8], mesh=[0, 1]> -> !fusion.tensor<f32[?, 8], mesh=[0, 1]>

// -----

// Refused with copy-engine: a gather has no copy-engine algorithm.
!x = !fusion.tensor<f32[2 didx, 8], mesh=[0, 1]>
!y = !fusion.tensor<f32[2, 8], mesh=[0]>
hir.program @gather(%x: !x) -> !y {
  %y = fusion.set %x : !x -> !y
  hir.return %y : !y
}
// CHECK: convert_op_to_communication_copy_engine.mlir:[[# @LINE - 3]]:3: error: 'fusion.set' op cannot communicate on the copy engines: only a single allgather, reduce_scatter or allreduce has a copy-engine algorithm

// -----

// Refused with copy-engine: an all-gather on each row of a 2-D mesh (a symmetric buffer
// spans its whole mesh).
!x = !fusion.tensor<f32[2 didy, 2 didx, 8], mesh=[[0, 1], [2, 3]]>
!y = !fusion.tensor<f32[2 didy, 2, 8], mesh=[[0, 1], [2, 3]]>
hir.program @rows(%x: !x) -> !y {
  %y = fusion.set %x : !x -> !y
  hir.return %y : !y
}
// CHECK: convert_op_to_communication_copy_engine.mlir:[[# @LINE - 3]]:3: error: 'fusion.set' op cannot communicate on the copy engines: its team must be a whole 1-D mesh of several devices (symmetric buffers span a mesh)

// -----

// auto weighs both transports with the machine's cost model (passes/machines/h200x2.json):
// for a 32-byte all-reduce NCCL's latency wins; for 128 MiB the copy engines' bandwidth.
!tiny = !fusion.tensor<f32[2 didx, 8], mesh=[0, 1]>
!tiny_sum = !fusion.tensor<f32[r2 didx, 8], mesh=[0, 1]>
!big = !fusion.tensor<f32[2 didx, 33554432], mesh=[0, 1]>
!big_sum = !fusion.tensor<f32[r2 didx, 33554432], mesh=[0, 1]>
hir.program @by_size(%p: !tiny, %q: !big) -> (!tiny_sum, !big_sum) {
  %s = fusion.reduce sum %p dims [0] : !tiny -> !tiny_sum
  %t = fusion.reduce sum %q dims [0] : !big -> !big_sum
  hir.return %s, %t : !tiny_sum, !big_sum
}
// AUTO-LABEL: hir.program @by_size
// AUTO:         hir.allreduce %p -> %s team [0, 1] op sum :
// AUTO:         hir.allreduce %q -> %t via %via team [0, 1] op sum transport copy_engine :

// -----

// Refused with copy-engine, NCCL with auto: an all-reduce whose input (3 elements per
// member) does not split into one chunk per member.
!p = !fusion.tensor<f32[2 didx, 3], mesh=[0, 1]>
!s = !fusion.tensor<f32[r2 didx, 3], mesh=[0, 1]>
hir.program @allreduce_uneven(%p: !p) -> !s {
  %s = fusion.reduce sum %p dims [0] : !p -> !s
  hir.return %s : !s
}
// CHECK: convert_op_to_communication_copy_engine.mlir:[[# @LINE - 3]]:3: error: 'fusion.reduce' op cannot communicate on the copy engines: its input of 3 elements per member does not split into 2 equal chunks
// AUTO-LABEL: hir.program @allreduce_uneven
// AUTO:         %w = hir.allreduce %p -> %s team [0, 1] op sum :
