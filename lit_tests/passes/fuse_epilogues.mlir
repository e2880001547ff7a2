// RUN: hostir-opt %s --split-input-file -p fuse-epilogues | filecheck %s

// A tanh-gelu of a matmul it alone reads becomes the matmul's epilogue; its users read
// the matmul.
!a = !fusion.tensor<bf16[4, 8]>
!b = !fusion.tensor<bf16[8, 16]>
!c = !fusion.tensor<bf16[4, 16, r8]>
!g = !fusion.tensor<bf16[4, 16]>
fusion.func @gelu(%a: !a, %b: !b) -> !g {
  %c = fusion.matmul %a, %b : !a, !b -> !c
  %g = fusion.gelu tanh %c : !c -> !g
  %n = fusion.neg %g : !g -> !g
  fusion.return %n : !g
}
// CHECK-LABEL: fusion.func @gelu
// CHECK-NEXT:    %c = fusion.matmul %a, %b epilogue gelu_tanh : !fusion.tensor<bf16[4, 8]>, !fusion.tensor<bf16[8, 16]> -> !fusion.tensor<bf16[4, 16, r8]>
// CHECK-NEXT:    %n = fusion.neg %c : !fusion.tensor<bf16[4, 16, r8]> -> !fusion.tensor<bf16[4, 16]>

// -----

// A linear's bias and relu: one epilogue; a returned activation retypes the function's
// result (a reduction axis is not part of the value).
!x = !fusion.tensor<f32[2, 3, 8]>
!w = !fusion.tensor<f32[16, 8]>
!bias = !fusion.tensor<f32[16]>
!y = !fusion.tensor<f32[2, 3, 16, r8]>
!r = !fusion.tensor<f32[2, 3, 16]>
fusion.func @linear_relu(%x: !x, %w: !w, %bias: !bias) -> !r {
  %y = fusion.linear %x, %w bias %bias : !x, !w, !bias -> !y
  %r = fusion.relu %y : !y -> !r
  fusion.return %r : !r
}
// CHECK-LABEL: fusion.func @linear_relu(%x: !fusion.tensor<f32[2, 3, 8]>, %w: !fusion.tensor<f32[16, 8]>, %bias: !fusion.tensor<f32[16]>) -> !fusion.tensor<f32[2, 3, 16, r8]>
// CHECK-NEXT:    %y = fusion.linear %x, %w bias %bias epilogue relu
// CHECK-NEXT:    fusion.return %y

// -----

// Left alone: an exact gelu (no GEMM library computes it in an epilogue), a product read
// twice, and an activation that reshards the product (it needs a communication).
!a = !fusion.tensor<f32[4, 8], mesh=[0, 1]>
!b = !fusion.tensor<f32[8, 16], mesh=[0, 1]>
!c = !fusion.tensor<f32[4, 16, r8], mesh=[0, 1]>
!g = !fusion.tensor<f32[4, 16], mesh=[0, 1]>
!s = !fusion.tensor<f32[4(2 didx, 2), 16], mesh=[0, 1]>
fusion.func @kept(%a: !a, %b: !b) -> (!g, !g, !g, !s) {
  %c = fusion.matmul %a, %b : !a, !b -> !c
  %exact = fusion.gelu none %c : !c -> !g
  %d = fusion.matmul %a, %b : !a, !b -> !c
  %r1 = fusion.relu %d : !c -> !g
  %r2 = fusion.relu %d : !c -> !g
  %e = fusion.matmul %a, %b : !a, !b -> !c
  %sharded = fusion.relu %e : !c -> !s
  fusion.return %exact, %r1, %r2, %sharded : !g, !g, !g, !s
}
// CHECK-LABEL: fusion.func @kept
// CHECK-NOT:     epilogue
// CHECK:         fusion.return
