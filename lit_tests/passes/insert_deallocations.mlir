// Run twice: the pass is idempotent (no second deallocation of anything).
// RUN: hostir-opt %s --split-input-file -p insert-deallocations,insert-deallocations | filecheck %s

// nvFuser's HostIrIntegrationTest.InsertDeallocations: add, add, sin (a unit), add.
// Each intermediate is freed right after its last use, so at most three tensors are
// alive at once (the input, the newest intermediate, the one being computed).
// CHECK-LABEL: hir.program @chain(
// CHECK-NEXT:    %t1 = fusion.add %in, %in
// CHECK-NEXT:    %t2 = fusion.add %t1, %t1
// CHECK-NEXT:    hir.deallocate %t1
// CHECK-NEXT:    %t3 = hir.post_on_stream @sin(%t2)
// CHECK-NEXT:    hir.deallocate %t2
// CHECK-NEXT:    %out = fusion.add %t3, %t3
// CHECK-NEXT:    hir.deallocate %t3
// CHECK-NEXT:    hir.return %out
hir.program @chain(%in: !fusion.tensor<f64[8, 8]>) -> !fusion.tensor<f64[8, 8]> {
  %t1 = fusion.add %in, %in : !fusion.tensor<f64[8, 8]>, !fusion.tensor<f64[8, 8]> -> !fusion.tensor<f64[8, 8]>
  %t2 = fusion.add %t1, %t1 : !fusion.tensor<f64[8, 8]>, !fusion.tensor<f64[8, 8]> -> !fusion.tensor<f64[8, 8]>
  %t3 = hir.post_on_stream @sin(%t2) : (!fusion.tensor<f64[8, 8]>) -> !fusion.tensor<f64[8, 8]>
  %out = fusion.add %t3, %t3 : !fusion.tensor<f64[8, 8]>, !fusion.tensor<f64[8, 8]> -> !fusion.tensor<f64[8, 8]>
  hir.return %out : !fusion.tensor<f64[8, 8]>
}
fusion.func @sin(%x: !fusion.tensor<f64[8, 8]>) -> !fusion.tensor<f64[8, 8]> {
  %y = fusion.sin %x : !fusion.tensor<f64[8, 8]> -> !fusion.tensor<f64[8, 8]>
  fusion.return %y : !fusion.tensor<f64[8, 8]>
}

// -----

// nvFuser's ExcludeOutputsFromDeallocations: t0 = add(in, in), t1 = matmul(t0, t0),
// both returned: nothing is freed.
// CHECK-LABEL: hir.program @outputs(
// CHECK-NOT:     hir.deallocate
// CHECK:         hir.return
hir.program @outputs(%in: !fusion.tensor<f32[4, 4]>) -> (!fusion.tensor<f32[4, 4]>, !fusion.tensor<f32[4, 4, r4]>) {
  %t0 = fusion.add %in, %in : !fusion.tensor<f32[4, 4]>, !fusion.tensor<f32[4, 4]> -> !fusion.tensor<f32[4, 4]>
  %t1 = fusion.matmul %t0, %t0 : !fusion.tensor<f32[4, 4]>, !fusion.tensor<f32[4, 4]> -> !fusion.tensor<f32[4, 4, r4]>
  hir.return %t0, %t1 : !fusion.tensor<f32[4, 4]>, !fusion.tensor<f32[4, 4, r4]>
}

// -----

// Buffers used only inside a loop (nvFuser 2025 never freed them) are freed after the
// outermost loop, in the block of their allocation; a buffer allocated in the loop body
// is freed there. Views are never freed: their base goes after the last use of every
// view (%t2 is read through %u only). The output %o and what is written into its views
// are kept; an unused buffer is freed at once. A collective's buffers stay alive
// until its wait.
// CHECK-LABEL: hir.program @loops(
// CHECK:         %t2 = fusion.add %t1, %t1
// CHECK-NEXT:    hir.deallocate %t1
// CHECK-NEXT:    %b = hir.allocate
// CHECK-NEXT:    %o = hir.allocate
// CHECK:         scf.for %i = %c0 to %c2 step %c1 {
// CHECK-NEXT:      scf.for %j = %c0 to %c4 step %c1 {
// CHECK-NEXT:        %k = arith.addi %i, %j : index
// CHECK-NEXT:        %v = hir.alias_select %b[%k] axis 0
// CHECK-NEXT:        %u = hir.alias_select %t2[%k] axis 0
// CHECK-NEXT:        %ov = hir.alias_select %o[%k] axis 0
// CHECK-NEXT:        %x = fusion.set %u into %v
// CHECK-NEXT:        %tmp = hir.allocate
// CHECK-NEXT:        %wk = hir.allreduce %x -> %tmp
// CHECK-NEXT:        %n = fusion.neg %x
// CHECK-NEXT:        hir.deallocate %n
// CHECK-NEXT:        hir.wait %wk
// CHECK-NEXT:        %y = fusion.exp %tmp into %ov
// CHECK-NEXT:        hir.deallocate %tmp
// CHECK-NEXT:      }
// CHECK-NEXT:    }
// CHECK-NEXT:    hir.deallocate %t2
// CHECK-NEXT:    hir.deallocate %b
// CHECK-NEXT:    %dead = hir.allocate
// CHECK-NEXT:    hir.deallocate %dead
// CHECK-NEXT:    hir.return %o
hir.program @loops(%a: !fusion.tensor<f32[8, 4]>) -> !fusion.tensor<f32[8, 4]> {
  %t1 = fusion.add %a, %a : !fusion.tensor<f32[8, 4]>, !fusion.tensor<f32[8, 4]> -> !fusion.tensor<f32[8, 4]>
  %t2 = fusion.add %t1, %t1 : !fusion.tensor<f32[8, 4]>, !fusion.tensor<f32[8, 4]> -> !fusion.tensor<f32[8, 4]>
  %b = hir.allocate : !fusion.tensor<f32[8, 4]>
  %o = hir.allocate : !fusion.tensor<f32[8, 4]>
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %c4 = arith.constant 4 : index
  scf.for %i = %c0 to %c2 step %c1 {
    scf.for %j = %c0 to %c4 step %c1 {
      %k = arith.addi %i, %j : index
      %v = hir.alias_select %b[%k] axis 0 : !fusion.tensor<f32[8, 4]> -> !fusion.tensor<f32[4]>
      %u = hir.alias_select %t2[%k] axis 0 : !fusion.tensor<f32[8, 4]> -> !fusion.tensor<f32[4]>
      %ov = hir.alias_select %o[%k] axis 0 : !fusion.tensor<f32[8, 4]> -> !fusion.tensor<f32[4]>
      %x = fusion.set %u into %v : !fusion.tensor<f32[4]> -> !fusion.tensor<f32[4]>
      %tmp = hir.allocate : !fusion.tensor<f32[4]>
      %wk = hir.allreduce %x -> %tmp team [0, 1] op sum : !fusion.tensor<f32[4]> -> !fusion.tensor<f32[4]>
      %n = fusion.neg %x : !fusion.tensor<f32[4]> -> !fusion.tensor<f32[4]>
      hir.wait %wk
      %y = fusion.exp %tmp into %ov : !fusion.tensor<f32[4]> -> !fusion.tensor<f32[4]>
    }
  }
  %dead = hir.allocate : !fusion.tensor<f32[8, 4]>
  hir.return %o : !fusion.tensor<f32[8, 4]>
}

// -----

// A unit writing into outs aliases them; the view of an output is not freed, nor its base;
// an input's view is not freed either.
// CHECK-LABEL: hir.program @outs(
// CHECK-NEXT:    %buf = hir.allocate
// CHECK-NEXT:    %r = hir.post_on_stream @copy(%x) outs(%buf
// CHECK-NEXT:    %c0 = arith.constant 0 : index
// CHECK-NEXT:    %row = hir.alias_select %x[%c0] axis 0
// CHECK-NEXT:    %s = fusion.add %r, %r
// CHECK-NEXT:    hir.deallocate %buf
// CHECK-NEXT:    %view = hir.alias_select %s[%c0] axis 0
// CHECK-NEXT:    hir.return %view, %row
hir.program @outs(%x: !fusion.tensor<f32[2, 4]>) -> (!fusion.tensor<f32[4]>, !fusion.tensor<f32[4]>) {
  %buf = hir.allocate : !fusion.tensor<f32[2, 4]>
  %r = hir.post_on_stream @copy(%x) outs(%buf : !fusion.tensor<f32[2, 4]>) : (!fusion.tensor<f32[2, 4]>) -> !fusion.tensor<f32[2, 4]>
  %c0 = arith.constant 0 : index
  %row = hir.alias_select %x[%c0] axis 0 : !fusion.tensor<f32[2, 4]> -> !fusion.tensor<f32[4]>
  %s = fusion.add %r, %r : !fusion.tensor<f32[2, 4]>, !fusion.tensor<f32[2, 4]> -> !fusion.tensor<f32[2, 4]>
  %view = hir.alias_select %s[%c0] axis 0 : !fusion.tensor<f32[2, 4]> -> !fusion.tensor<f32[4]>
  hir.return %view, %row : !fusion.tensor<f32[4]>, !fusion.tensor<f32[4]>
}
fusion.func @copy(%x: !fusion.tensor<f32[2, 4]>) -> !fusion.tensor<f32[2, 4]> {
  %y = fusion.neg %x : !fusion.tensor<f32[2, 4]> -> !fusion.tensor<f32[2, 4]>
  fusion.return %y : !fusion.tensor<f32[2, 4]>
}
