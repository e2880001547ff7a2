// RUN: hostir-opt %s --split-input-file -p 'hostir-lower{transport=copy-engine}' | filecheck %s --check-prefix=CE
// RUN: hostir-opt %s --split-input-file -p 'hostir-lower{transport=nccl}' | filecheck %s --check-prefix=NCCL
// RUN: hostir-opt %s --split-input-file -p schedule-communication | filecheck %s

// The attention projections of a sequence-parallel layer, one stream loop: QKV from the
// all-gathered X, O reduce-scattered. Each iteration posts the all-gather of its X chunk
// first (its input is there), so it travels beside the output projection's GEMMs, posts
// the reduce-scatter as soon as the peer's part of O is computed, and waits for each
// whole collective last (lowered without the pass, the all-gather was posted only after
// the wait for the reduce-scatter).
// CE-LABEL:  hir.program @projections(
// CE:          scf.for
// CE:          scf.for
// CE:            hir.set_current_stream
// CE-NOT:        fusion.matmul
// CE:            %[[AG:.+]] = hir.allgather {{.*}} transport copy_engine peers_only
// CE:            scf.for
// CE:              fusion.matmul
// CE:            }
// CE:            %[[RS:.+]] = hir.reduce_scatter {{.*}} transport copy_engine
// CE:            fusion.matmul
// CE:            fusion.matmul
// CE:            scf.for
// CE:              hir.wait %[[AG]] from
// CE:              fusion.matmul
// CE:            }
// CE-NEXT:       hir.wait %[[RS]]
// CE-NEXT:       hir.wait %[[AG]]
// CE-NEXT:       hir.set_current_stream %user_stream
// On NCCL the QKV GEMM needs the whole all-gather: its wait comes first, the
// reduce-scatter's after that GEMM.
// NCCL-LABEL: hir.program @projections(
// NCCL:         hir.set_current_stream %worker
// NCCL:         %[[AG:.+]] = hir.allgather
// NCCL:         fusion.matmul
// NCCL:         %[[RS:.+]] = hir.reduce_scatter
// NCCL-NEXT:    hir.wait %[[AG]]
// NCCL-NEXT:    %[[QKV:.+]] = hir.alias_select %qkv
// NCCL-NEXT:    fusion.matmul {{.*}} into %[[QKV]]
// NCCL-NEXT:    hir.wait %[[RS]]
// NCCL-NEXT:    hir.set_current_stream %user_stream
!x = !fusion.tensor<f32[2, 2 didx, 2, 4], mesh=[0, 1]>
!wqkv = !fusion.tensor<f32[4, 6(2 didx, 3)], mesh=[0, 1]>
!qkv = !fusion.tensor<f32[2 stream, 2, 2, 6(2 didx, 3), r4], mesh=[0, 1]>
!a = !fusion.tensor<f32[2, 2, 2, 4(2 didx, 2)], mesh=[0, 1]>
!wo = !fusion.tensor<f32[4(2 didx, 2), 4], mesh=[0, 1]>
!o = !fusion.tensor<f32[2 stream, 2 didx, 2, 4, r4], mesh=[0, 1]>
fusion.func @projections(%x: !x, %wqkv: !wqkv, %a: !a, %wo: !wo) -> (!o, !qkv) {
  %o = fusion.matmul %a, %wo : !a, !wo -> !o
  %qkv = fusion.matmul %x, %wqkv : !x, !wqkv -> !qkv
  fusion.return %o, %qkv : !o, !qkv
}

// -----

// What holds ops in place: a consumer of a collective's output stays after its wait, the
// producer of a collective's input before its post, nothing crosses a stream switch, and
// a view moves with the first op that reads it. The independent product %q moves above
// the wait; the post of %v above the independent product %q (not above %h, which writes
// its input).
// CHECK-LABEL: hir.program @held(
// CHECK-NEXT:    %out = hir.allocate
// CHECK-NEXT:    %w = hir.allreduce %a -> %out team [0, 1] op sum
// CHECK-NEXT:    %h = fusion.add %b, %b
// CHECK-NEXT:    %g = hir.allocate
// CHECK-NEXT:    %v = hir.allgather %h -> %g team [0, 1]
// CHECK-NEXT:    %q = fusion.mul %b, %b
// CHECK-NEXT:    hir.wait %w
// CHECK-NEXT:    %c = fusion.add %out, %b
// CHECK-NEXT:    hir.wait %v
// CHECK-NEXT:    %s = hir.get_current_stream
// CHECK-NEXT:    hir.set_current_stream %s
// CHECK-NEXT:    %e = fusion.mul %b, %b
// CHECK-NEXT:    hir.return
!t = !fusion.tensor<f32[4]>
!t2 = !fusion.tensor<f32[8]>
hir.program @held(%a: !t, %b: !t) -> (!t, !t, !t, !t2, !t) {
  %out = hir.allocate : !t
  %w = hir.allreduce %a -> %out team [0, 1] op sum : !t -> !t
  hir.wait %w
  %c = fusion.add %out, %b : !t, !t -> !t
  %h = fusion.add %b, %b : !t, !t -> !t
  %q = fusion.mul %b, %b : !t, !t -> !t
  %g = hir.allocate : !t2
  %v = hir.allgather %h -> %g team [0, 1] : !t -> !t2
  hir.wait %v
  %s = hir.get_current_stream
  hir.set_current_stream %s
  %e = fusion.mul %b, %b : !t, !t -> !t
  hir.return %c, %h, %q, %g, %e : !t, !t, !t, !t2, !t
}
