// RUN: hostir-opt %s --split-input-file -p split-by-member | filecheck %s

// reduce-in-producer: in a loop of chunks, the all-reduce takes the own part's matmul
// operands (`own`) instead of the own part being computed into its input; its second
// phase multiplies them onto the other member's part (docs/copy_engine.md), while the
// next chunk's other parts compute. The other members' parts are as without the option.
!a = !fusion.tensor<f32[2, 2 didx, 2, 4, 4], mesh=[0, 1]>
!a_i = !fusion.tensor<f32[2 didx, 2, 4, 4], mesh=[0, 1]>
!b = !fusion.tensor<f32[2 didx, b1, 4, 3], mesh=[0, 1]>
!u = !fusion.tensor<f32[2, 2 didx, 2, 4, 3, r4], mesh=[0, 1]>
!u_i = !fusion.tensor<f32[2 didx, 2, 4, 3, r4], mesh=[0, 1]>
!c = !fusion.tensor<f32[2, r2 didx, 2, 4, 3], mesh=[0, 1]>
!c_i = !fusion.tensor<f32[r2 didx, 2, 4, 3], mesh=[0, 1]>
!v = !fusion.tensor<f32[2, 2, 2 didx, 2, 4, 3], mesh=[0, 1]>
!v_i = !fusion.tensor<f32[2, 2 didx, 2, 4, 3], mesh=[0, 1]>
hir.program @allreduce_producer(%a: !a, %b: !b) -> !c {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %u = hir.allocate : !u
  %c = hir.allocate : !c
  %via = hir.allocate symmetric : !v
  scf.for %i = %c0 to %c2 step %c1 {
    %a_i = hir.alias_select %a[%i] axis 0 : !a -> !a_i
    %u_i = hir.alias_select %u[%i] axis 0 : !u -> !u_i
    %c_i = hir.alias_select %c[%i] axis 0 : !c -> !c_i
    %via_i = hir.alias_select %via[%i] axis 0 : !v -> !v_i
    %r = fusion.matmul %a_i, %b into %u_i : !a_i, !b -> !u_i
    %w = hir.allreduce %u_i -> %c_i via %via_i team [0, 1] op sum transport copy_engine : !u_i -> !c_i, !v_i
    hir.wait %w
  }
  hir.deallocate %via : !v
  hir.return %c : !c
}
// CHECK-LABEL: hir.program @allreduce_producer
// CHECK:         scf.for %i = %c0 to %c2 step %c1 {
// CHECK:           scf.for %s = %s0 to %team step %c1_1 {
// CHECK:             fusion.matmul %a_i_p, %b_p into %u_i_p
// CHECK:           }
// CHECK-NEXT:      %a_i_me = hir.alias_select %a_i[%me] axis 1 : !fusion.tensor<f32[2 didx, 2, 4, 4], mesh=[0, 1]> -> !fusion.tensor<f32[2 didx, 4, 4], mesh=[0, 1]>
// CHECK-NEXT:      %b_me = hir.alias_select %b[%me] axis 1
// CHECK-NEXT:      %w = hir.allreduce %u_i -> %c_i via %via_i own(%a_i_me, %b_me : !fusion.tensor<f32[2 didx, 4, 4], mesh=[0, 1]>, !fusion.tensor<f32[2 didx, 4, 3], mesh=[0, 1]>) team [0, 1] op sum transport copy_engine
// CHECK-NOT:       fusion.matmul
// CHECK:           hir.wait %w

// -----

// Run whole (no loop, or a loop of one chunk), the own part is computed before the wait as
// without the option: in the all-reduce its GEMM would wait for the other member's GEMM and
// push with nothing else to compute (`beside_later_chunks`).
!a = !fusion.tensor<f32[2 didx, 2, 4, 4], mesh=[0, 1]>
!b = !fusion.tensor<f32[2 didx, b1, 4, 3], mesh=[0, 1]>
!u = !fusion.tensor<f32[2 didx, 2, 4, 3, r4], mesh=[0, 1]>
!c = !fusion.tensor<f32[r2 didx, 2, 4, 3], mesh=[0, 1]>
!v = !fusion.tensor<f32[2, 2 didx, 2, 4, 3], mesh=[0, 1]>
hir.program @whole(%a: !a, %b: !b) -> !c {
  %u = hir.allocate : !u
  %c = hir.allocate : !c
  %via = hir.allocate symmetric : !v
  %r = fusion.matmul %a, %b into %u : !a, !b -> !u
  %w = hir.allreduce %u -> %c via %via team [0, 1] op sum transport copy_engine : !u -> !c, !v
  hir.wait %w
  hir.deallocate %via : !v
  hir.return %c : !c
}
// CHECK-LABEL: hir.program @whole
// CHECK:         %w = hir.allreduce %u -> %c via %via team [0, 1]
// CHECK:         fusion.matmul {{.*}} into
// CHECK-NEXT:    hir.wait %w

// -----

// A loop of one chunk is run whole too.
!a = !fusion.tensor<f32[1, 2 didx, 2, 4, 4], mesh=[0, 1]>
!a_i = !fusion.tensor<f32[2 didx, 2, 4, 4], mesh=[0, 1]>
!b = !fusion.tensor<f32[2 didx, b1, 4, 3], mesh=[0, 1]>
!u = !fusion.tensor<f32[1, 2 didx, 2, 4, 3, r4], mesh=[0, 1]>
!u_i = !fusion.tensor<f32[2 didx, 2, 4, 3, r4], mesh=[0, 1]>
!c = !fusion.tensor<f32[1, r2 didx, 2, 4, 3], mesh=[0, 1]>
!c_i = !fusion.tensor<f32[r2 didx, 2, 4, 3], mesh=[0, 1]>
!v = !fusion.tensor<f32[1, 2, 2 didx, 2, 4, 3], mesh=[0, 1]>
!v_i = !fusion.tensor<f32[2, 2 didx, 2, 4, 3], mesh=[0, 1]>
hir.program @one_chunk(%a: !a, %b: !b) -> !c {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %u = hir.allocate : !u
  %c = hir.allocate : !c
  %via = hir.allocate symmetric : !v
  scf.for %i = %c0 to %c1 step %c1 {
    %a_i = hir.alias_select %a[%i] axis 0 : !a -> !a_i
    %u_i = hir.alias_select %u[%i] axis 0 : !u -> !u_i
    %c_i = hir.alias_select %c[%i] axis 0 : !c -> !c_i
    %via_i = hir.alias_select %via[%i] axis 0 : !v -> !v_i
    %r = fusion.matmul %a_i, %b into %u_i : !a_i, !b -> !u_i
    %w = hir.allreduce %u_i -> %c_i via %via_i team [0, 1] op sum transport copy_engine : !u_i -> !c_i, !v_i
    hir.wait %w
  }
  hir.deallocate %via : !v
  hir.return %c : !c
}
// CHECK-LABEL: hir.program @one_chunk
// CHECK:           %w = hir.allreduce %u_i -> %c_i via %via_i team [0, 1]
// CHECK:           fusion.matmul {{.*}} into
// CHECK-NEXT:      hir.wait %w

// -----

// A matmul with an epilogue (the product is not what is reduced) computes its own part
// as without the option, in a loop too.
!a = !fusion.tensor<f32[2, 2 didx, 2, 4, 4], mesh=[0, 1]>
!a_i = !fusion.tensor<f32[2 didx, 2, 4, 4], mesh=[0, 1]>
!b = !fusion.tensor<f32[2 didx, b1, 4, 3], mesh=[0, 1]>
!u = !fusion.tensor<f32[2, 2 didx, 2, 4, 3, r4], mesh=[0, 1]>
!u_i = !fusion.tensor<f32[2 didx, 2, 4, 3, r4], mesh=[0, 1]>
!c = !fusion.tensor<f32[2, r2 didx, 2, 4, 3], mesh=[0, 1]>
!c_i = !fusion.tensor<f32[r2 didx, 2, 4, 3], mesh=[0, 1]>
!v = !fusion.tensor<f32[2, 2, 2 didx, 2, 4, 3], mesh=[0, 1]>
!v_i = !fusion.tensor<f32[2, 2 didx, 2, 4, 3], mesh=[0, 1]>
hir.program @epilogue(%a: !a, %b: !b) -> !c {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %u = hir.allocate : !u
  %c = hir.allocate : !c
  %via = hir.allocate symmetric : !v
  scf.for %i = %c0 to %c2 step %c1 {
    %a_i = hir.alias_select %a[%i] axis 0 : !a -> !a_i
    %u_i = hir.alias_select %u[%i] axis 0 : !u -> !u_i
    %c_i = hir.alias_select %c[%i] axis 0 : !c -> !c_i
    %via_i = hir.alias_select %via[%i] axis 0 : !v -> !v_i
    %r = fusion.matmul %a_i, %b epilogue gelu_tanh into %u_i : !a_i, !b -> !u_i
    %w = hir.allreduce %u_i -> %c_i via %via_i team [0, 1] op sum transport copy_engine : !u_i -> !c_i, !v_i
    hir.wait %w
  }
  hir.deallocate %via : !v
  hir.return %c : !c
}
// CHECK-LABEL: hir.program @epilogue
// CHECK:           %w = hir.allreduce %u_i -> %c_i via %via_i team [0, 1]
// CHECK:           fusion.matmul {{.*}} epilogue gelu_tanh into
// CHECK-NEXT:      hir.wait %w
