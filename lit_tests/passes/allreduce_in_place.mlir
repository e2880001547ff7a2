// RUN: hostir-opt %s --split-input-file -p allreduce-in-place | filecheck %s

!a = !fusion.tensor<bf16[2 didx, 8, 4], mesh=[0, 1]>
!b = !fusion.tensor<bf16[2 didx, 4, 16], mesh=[0, 1]>
!p = !fusion.tensor<bf16[2 didx, 8, 16, r4], mesh=[0, 1]>
!c = !fusion.tensor<bf16[r2, 8, 16], mesh=[0, 1]>

// A row-parallel matmul + all-reduce on NCCL: the matmul computes its partial sums into
// the output, seen as the partial's type, and NCCL reduces there (no copy of the input
// into the output first).
// CHECK-LABEL: hir.program @matmul_ar(
// CHECK-NEXT:    %c = hir.allocate : !fusion.tensor<bf16[r2, 8, 16], mesh=[0, 1]>
// CHECK-NEXT:    %0 = hir.alias_as %c : !fusion.tensor<bf16[r2, 8, 16], mesh=[0, 1]> -> !fusion.tensor<bf16[2 didx, 8, 16, r4], mesh=[0, 1]>
// CHECK-NEXT:    %p = fusion.matmul %a, %b into %0 :
// CHECK-NEXT:    %w = hir.allreduce %p -> %c team [0, 1] op sum :
// CHECK-NEXT:    hir.wait %w
// CHECK-NEXT:    hir.return %c
hir.program @matmul_ar(%a: !a, %b: !b) -> !c {
  %p = fusion.matmul %a, %b : !a, !b -> !p
  %c = hir.allocate : !c
  %w = hir.allreduce %p -> %c team [0, 1] op sum : !p -> !c
  hir.wait %w
  hir.return %c : !c
}

// -----

!a = !fusion.tensor<bf16[2 didx, 8, 4], mesh=[0, 1]>
!b = !fusion.tensor<bf16[2 didx, 4, 16], mesh=[0, 1]>
!p = !fusion.tensor<bf16[2 didx, 8, 16, r4], mesh=[0, 1]>
!c = !fusion.tensor<bf16[r2, 8, 16], mesh=[0, 1]>
!v = !fusion.tensor<bf16[2 didx, 2, 8, 16], mesh=[0, 1]>

// Left alone: partial sums read by another op too, and an all-reduce on the copy engines
// (which reduces through its own `via` buffer).
// CHECK-LABEL: hir.program @read_twice(
// CHECK-NEXT:    %p = fusion.matmul %a, %b :
// CHECK-NEXT:    %c = hir.allocate :
// CHECK-NEXT:    %w = hir.allreduce %p -> %c
// CHECK-NOT:     hir.alias_as
// CHECK-LABEL: hir.program @copy_engine(
// CHECK-NOT:     hir.alias_as
// CHECK:         hir.return
hir.program @read_twice(%a: !a, %b: !b) -> (!c, !p) {
  %p = fusion.matmul %a, %b : !a, !b -> !p
  %c = hir.allocate : !c
  %w = hir.allreduce %p -> %c team [0, 1] op sum : !p -> !c
  hir.wait %w
  hir.return %c, %p : !c, !p
}
hir.program @copy_engine(%a: !a, %b: !b) -> !c {
  %p = fusion.matmul %a, %b : !a, !b -> !p
  %c = hir.allocate : !c
  %via = hir.allocate symmetric : !v
  %w = hir.allreduce %p -> %c via %via team [0, 1] op sum transport copy_engine : !p -> !c, !v
  hir.wait %w
  hir.return %c : !c
}

// -----

!p = !fusion.tensor<f32[2 didx, ?], mesh=[0, 1]>
!c = !fusion.tensor<f32[r2, ?], mesh=[0, 1]>

// Left alone: an output of a dynamic extent (allocated from the extent of a value
// computed first).
// CHECK-LABEL: hir.program @dynamic(
// CHECK-NEXT:    %p = fusion.neg %x
// CHECK-NOT:     hir.alias_as
hir.program @dynamic(%x: !p) -> !c {
  %p = fusion.neg %x : !p -> !p
  %n = hir.extent %p axis 1 : !p
  %c = hir.allocate(%n) : !c
  %w = hir.allreduce %p -> %c team [0, 1] op sum : !p -> !c
  hir.wait %w
  hir.return %c : !c
}

// -----

!a = !fusion.tensor<bf16[2 didx, 8, 4], mesh=[0, 1]>
!b = !fusion.tensor<bf16[2 didx, 4, 16], mesh=[0, 1]>
!p = !fusion.tensor<bf16[2 didx, 8, 16, r4], mesh=[0, 1]>
!c = !fusion.tensor<bf16[r2, 8, 16], mesh=[0, 1]>

// Left alone: an output written before the all-reduce (the partial sums would be
// overwritten there).
// CHECK-LABEL: hir.program @output_written_first(
// CHECK-NEXT:    %p = fusion.matmul %a, %b :
// CHECK-NOT:     hir.alias_as
hir.program @output_written_first(%a: !a, %b: !b, %q: !p) -> !c {
  %p = fusion.matmul %a, %b : !a, !b -> !p
  %c = hir.allocate : !c
  %w0 = hir.allreduce %q -> %c team [0, 1] op sum : !p -> !c
  hir.wait %w0
  %w = hir.allreduce %p -> %c team [0, 1] op sum : !p -> !c
  hir.wait %w
  hir.return %c : !c
}
