// RUN: hostir-opt %s --split-input-file -p 'split-by-member{reduce-in-producer=true}' | filecheck %s

// reduce-in-producer: the all-reduce takes the own part's matmul operands (`own`) instead
// of the own part being computed into its input; its second phase multiplies them onto
// the other member's part (docs/copy_engine.md). The other members' parts are as without
// the option.
!a = !fusion.tensor<f32[2 didx, 2, 4, 4], mesh=[0, 1]>
!b = !fusion.tensor<f32[2 didx, b1, 4, 3], mesh=[0, 1]>
!u = !fusion.tensor<f32[2 didx, 2, 4, 3, r4], mesh=[0, 1]>
!c = !fusion.tensor<f32[r2 didx, 2, 4, 3], mesh=[0, 1]>
!v = !fusion.tensor<f32[2, 2 didx, 2, 4, 3], mesh=[0, 1]>
hir.program @allreduce_producer(%a: !a, %b: !b) -> !c {
  %u = hir.allocate : !u
  %c = hir.allocate : !c
  %via = hir.allocate symmetric : !v
  %r = fusion.matmul %a, %b into %u : !a, !b -> !u
  %w = hir.allreduce %u -> %c via %via team [0, 1] op sum transport copy_engine : !u -> !c, !v
  hir.wait %w
  hir.deallocate %via : !v
  hir.return %c : !c
}
// CHECK-LABEL: hir.program @allreduce_producer
// CHECK:         scf.for %s = %s0 to %team step %c1 {
// CHECK:           fusion.matmul %a_p, %b_p into %u_p
// CHECK:         }
// CHECK-NEXT:    %a_me = hir.alias_select %a[%me] axis 1 : !fusion.tensor<f32[2 didx, 2, 4, 4], mesh=[0, 1]> -> !fusion.tensor<f32[2 didx, 4, 4], mesh=[0, 1]>
// CHECK-NEXT:    %b_me = hir.alias_select %b[%me] axis 1
// CHECK-NEXT:    %w = hir.allreduce %u -> %c via %via own(%a_me, %b_me : !fusion.tensor<f32[2 didx, 4, 4], mesh=[0, 1]>, !fusion.tensor<f32[2 didx, 4, 3], mesh=[0, 1]>) team [0, 1] op sum transport copy_engine
// CHECK-NOT:     fusion.matmul
// CHECK:         hir.wait %w

// -----

// A matmul with an epilogue (the product is not what is reduced) computes its own part
// as without the option.
!a = !fusion.tensor<f32[2 didx, 2, 4, 4], mesh=[0, 1]>
!b = !fusion.tensor<f32[2 didx, b1, 4, 3], mesh=[0, 1]>
!u = !fusion.tensor<f32[2 didx, 2, 4, 3, r4], mesh=[0, 1]>
!c = !fusion.tensor<f32[r2 didx, 2, 4, 3], mesh=[0, 1]>
!v = !fusion.tensor<f32[2, 2 didx, 2, 4, 3], mesh=[0, 1]>
hir.program @epilogue(%a: !a, %b: !b) -> !c {
  %u = hir.allocate : !u
  %c = hir.allocate : !c
  %via = hir.allocate symmetric : !v
  %r = fusion.matmul %a, %b epilogue gelu_tanh into %u : !a, !b -> !u
  %w = hir.allreduce %u -> %c via %via team [0, 1] op sum transport copy_engine : !u -> !c, !v
  hir.wait %w
  hir.deallocate %via : !v
  hir.return %c : !c
}
// CHECK-LABEL: hir.program @epilogue
// CHECK:         %w = hir.allreduce %u -> %c via %via team [0, 1]
// CHECK:         fusion.matmul {{.*}} epilogue gelu_tanh into
// CHECK-NEXT:    hir.wait %w
