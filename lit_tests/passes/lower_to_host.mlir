// RUN: hostir-opt %s --split-input-file -p lower-to-host | filecheck %s

// Standalone host ops (binary, matmul) are placed in the program; the unary ops between
// them fuse into kernel units called with hir.post_on_stream. The scalar operand is
// re-materialized where it is used; inputs, outputs and names are kept.
// CHECK-LABEL: hir.program @mixed(%a: !fusion.tensor<f32[8, 4]>, %b: !fusion.tensor<f32[4, 2]>) -> (!fusion.tensor<f32[8, 2, r4]>, !fusion.tensor<f32[8, 4]>) {
// CHECK-NEXT:    %e = hir.post_on_stream @mixed_unit0(%a) : (!fusion.tensor<f32[8, 4]>) -> !fusion.tensor<f32[8, 4]>
// CHECK-NEXT:    %s = arith.constant 2.000000e+00 : f32
// CHECK-NEXT:    %m = fusion.mul %e, %s : !fusion.tensor<f32[8, 4]>, f32 -> !fusion.tensor<f32[8, 4]>
// CHECK-NEXT:    %n = hir.post_on_stream @mixed_unit1(%m) : (!fusion.tensor<f32[8, 4]>) -> !fusion.tensor<f32[8, 4]>
// CHECK-NEXT:    %c = fusion.matmul %n, %b : !fusion.tensor<f32[8, 4]>, !fusion.tensor<f32[4, 2]> -> !fusion.tensor<f32[8, 2, r4]>
// CHECK-NEXT:    hir.return %c, %e : !fusion.tensor<f32[8, 2, r4]>, !fusion.tensor<f32[8, 4]>
// CHECK-NEXT:  }
// CHECK-NEXT:  fusion.func @mixed_unit0(%a: !fusion.tensor<f32[8, 4]>) -> !fusion.tensor<f32[8, 4]> {
// CHECK-NEXT:    %r = fusion.relu %a : !fusion.tensor<f32[8, 4]> -> !fusion.tensor<f32[8, 4]>
// CHECK-NEXT:    %e = fusion.exp %r : !fusion.tensor<f32[8, 4]> -> !fusion.tensor<f32[8, 4]>
// CHECK-NEXT:    fusion.return %e : !fusion.tensor<f32[8, 4]>
// CHECK-NEXT:  }
// CHECK-NEXT:  fusion.func @mixed_unit1(%m: !fusion.tensor<f32[8, 4]>) -> !fusion.tensor<f32[8, 4]> {
// CHECK-NEXT:    %n = fusion.neg %m : !fusion.tensor<f32[8, 4]> -> !fusion.tensor<f32[8, 4]>
// CHECK-NEXT:    fusion.return %n : !fusion.tensor<f32[8, 4]>
// CHECK-NEXT:  }
fusion.func @mixed(%a: !fusion.tensor<f32[8, 4]>, %b: !fusion.tensor<f32[4, 2]>) -> (!fusion.tensor<f32[8, 2, r4]>, !fusion.tensor<f32[8, 4]>) {
  %r = fusion.relu %a : !fusion.tensor<f32[8, 4]> -> !fusion.tensor<f32[8, 4]>
  %e = fusion.exp %r : !fusion.tensor<f32[8, 4]> -> !fusion.tensor<f32[8, 4]>
  %s = arith.constant 2.0 : f32
  %m = fusion.mul %e, %s : !fusion.tensor<f32[8, 4]>, f32 -> !fusion.tensor<f32[8, 4]>
  %n = fusion.neg %m : !fusion.tensor<f32[8, 4]> -> !fusion.tensor<f32[8, 4]>
  %c = fusion.matmul %n, %b : !fusion.tensor<f32[8, 4]>, !fusion.tensor<f32[4, 2]> -> !fusion.tensor<f32[8, 2, r4]>
  fusion.return %c, %e : !fusion.tensor<f32[8, 2, r4]>, !fusion.tensor<f32[8, 4]>
}

// -----

// A fusion of one non-standalone group: one unit, the program only calls it.
// CHECK-LABEL: hir.program @relu_exp(%x: !fusion.tensor<f32[4, 8]>) -> !fusion.tensor<f32[4, 8]> {
// CHECK-NEXT:    %e = hir.post_on_stream @relu_exp_unit0(%x) : (!fusion.tensor<f32[4, 8]>) -> !fusion.tensor<f32[4, 8]>
// CHECK-NEXT:    hir.return %e : !fusion.tensor<f32[4, 8]>
fusion.func @relu_exp(%x: !fusion.tensor<f32[4, 8]>) -> !fusion.tensor<f32[4, 8]> {
  %r = fusion.relu %x : !fusion.tensor<f32[4, 8]> -> !fusion.tensor<f32[4, 8]>
  %e = fusion.exp %r : !fusion.tensor<f32[4, 8]> -> !fusion.tensor<f32[4, 8]>
  fusion.return %e : !fusion.tensor<f32[4, 8]>
}

// -----

// Siblings fuse through their common producer; the unit has two outputs, both used by
// the standalone add. Every non-standalone kind (cast, permute, reshape, broadcast,
// squeeze) fuses.
// CHECK-LABEL: hir.program @diamond(%x: !fusion.tensor<f32[4, 8]>) -> !fusion.tensor<f32[8, 4]> {
// CHECK-NEXT:    %p, %q = hir.post_on_stream @diamond_unit0(%x) : (!fusion.tensor<f32[4, 8]>) -> (!fusion.tensor<f32[8, 4]>, !fusion.tensor<f32[8, 4]>)
// CHECK-NEXT:    %s = fusion.add %p, %q
// CHECK-NEXT:    hir.return %s
// CHECK:       fusion.func @diamond_unit0(%x: !fusion.tensor<f32[4, 8]>) -> (!fusion.tensor<f32[8, 4]>, !fusion.tensor<f32[8, 4]>) {
// CHECK-NEXT:    %r = fusion.relu %x
// CHECK-NEXT:    %p = fusion.permute %r dims [1, 0]
// CHECK-NEXT:    %c = fusion.cast %r
// CHECK-NEXT:    %b = fusion.broadcast %c dims [0]
// CHECK-NEXT:    %t = fusion.squeeze %b dims [0]
// CHECK-NEXT:    %q = fusion.reshape %t
// CHECK-NEXT:    fusion.return %p, %q
fusion.func @diamond(%x: !fusion.tensor<f32[4, 8]>) -> !fusion.tensor<f32[8, 4]> {
  %r = fusion.relu %x : !fusion.tensor<f32[4, 8]> -> !fusion.tensor<f32[4, 8]>
  %p = fusion.permute %r dims [1, 0] : !fusion.tensor<f32[4, 8]> -> !fusion.tensor<f32[8, 4]>
  %c = fusion.cast %r : !fusion.tensor<f32[4, 8]> -> !fusion.tensor<f32[4, 8]>
  %b = fusion.broadcast %c dims [0] : !fusion.tensor<f32[4, 8]> -> !fusion.tensor<f32[b1, 4, 8]>
  %t = fusion.squeeze %b dims [0] : !fusion.tensor<f32[b1, 4, 8]> -> !fusion.tensor<f32[4, 8]>
  %q = fusion.reshape %t : !fusion.tensor<f32[4, 8]> -> !fusion.tensor<f32[8, 4]>
  %s = fusion.add %p, %q : !fusion.tensor<f32[8, 4]>, !fusion.tensor<f32[8, 4]> -> !fusion.tensor<f32[8, 4]>
  fusion.return %s : !fusion.tensor<f32[8, 4]>
}

// -----

// Every standalone kind stays alone: set, slice, select (its index constant comes
// along), reduce, linear; a resharding set too. Returning an input is preserved.
// CHECK-LABEL: hir.program @standalone(
// CHECK-NEXT:    %s = fusion.set %x
// CHECK-NEXT:    %l = fusion.slice %s starts [0, 0] stops [2, 8] steps [1, 1]
// CHECK-NEXT:    %i = arith.constant 1 : index
// CHECK-NEXT:    %k = fusion.select %l[%i] dim 0
// CHECK-NEXT:    %r = fusion.reduce sum %s dims [1]
// CHECK-NEXT:    %y = fusion.linear %s, %w
// CHECK-NEXT:    %g = fusion.set %a
// CHECK-NEXT:    hir.return %k, %r, %y, %g, %x
fusion.func @standalone(%x: !fusion.tensor<f32[4, 8]>, %w: !fusion.tensor<f32[3, 8]>, %a: !fusion.tensor<f32[2 didx, 8], mesh=[0, 1]>) -> (!fusion.tensor<f32[8]>, !fusion.tensor<f32[4, r8]>, !fusion.tensor<f32[4, 3, r8]>, !fusion.tensor<f32[2, 8], mesh=[0, 1]>, !fusion.tensor<f32[4, 8]>) {
  %s = fusion.set %x : !fusion.tensor<f32[4, 8]> -> !fusion.tensor<f32[4, 8]>
  %l = fusion.slice %s starts [0, 0] stops [2, 8] steps [1, 1] : !fusion.tensor<f32[4, 8]> -> !fusion.tensor<f32[2, 8]>
  %i = arith.constant 1 : index
  %k = fusion.select %l[%i] dim 0 : !fusion.tensor<f32[2, 8]>, index -> !fusion.tensor<f32[8]>
  %r = fusion.reduce sum %s dims [1] : !fusion.tensor<f32[4, 8]> -> !fusion.tensor<f32[4, r8]>
  %y = fusion.linear %s, %w : !fusion.tensor<f32[4, 8]>, !fusion.tensor<f32[3, 8]> -> !fusion.tensor<f32[4, 3, r8]>
  %g = fusion.set %a : !fusion.tensor<f32[2 didx, 8], mesh=[0, 1]> -> !fusion.tensor<f32[2, 8], mesh=[0, 1]>
  fusion.return %k, %r, %y, %g, %x : !fusion.tensor<f32[8]>, !fusion.tensor<f32[4, r8]>, !fusion.tensor<f32[4, 3, r8]>, !fusion.tensor<f32[2, 8], mesh=[0, 1]>, !fusion.tensor<f32[4, 8]>
}

// -----

// A module that already holds a host program is left as it is (its unit is not a fusion).
// CHECK-LABEL: hir.program @f(
// CHECK-NEXT:    %y = hir.post_on_stream @f_unit0(%x)
// CHECK-NEXT:    hir.return %y
// CHECK-NEXT:  }
// CHECK-NEXT:  fusion.func @f_unit0(
// CHECK-NEXT:    fusion.relu
hir.program @f(%x: !fusion.tensor<f32[4]>) -> !fusion.tensor<f32[4]> {
  %y = hir.post_on_stream @f_unit0(%x) : (!fusion.tensor<f32[4]>) -> !fusion.tensor<f32[4]>
  hir.return %y : !fusion.tensor<f32[4]>
}
fusion.func @f_unit0(%x: !fusion.tensor<f32[4]>) -> !fusion.tensor<f32[4]> {
  %y = fusion.relu %x : !fusion.tensor<f32[4]> -> !fusion.tensor<f32[4]>
  fusion.return %y : !fusion.tensor<f32[4]>
}

// -----

// A fusion beside a host program is lowered; a unit name that is taken is skipped. (A
// fusion with the program's signature would be the program's reference, not lowered.)
// CHECK-LABEL: hir.program @g(
// CHECK-NEXT:    %e = hir.post_on_stream @g_unit1(%x)
// CHECK:       fusion.func @g_unit1(
// CHECK-NEXT:    fusion.exp
// CHECK:       fusion.func @g_unit0(
// CHECK-NEXT:    fusion.neg
fusion.func @g(%x: !fusion.tensor<f32[8]>) -> !fusion.tensor<f32[8]> {
  %e = fusion.exp %x : !fusion.tensor<f32[8]> -> !fusion.tensor<f32[8]>
  fusion.return %e : !fusion.tensor<f32[8]>
}
hir.program @h(%x: !fusion.tensor<f32[4]>) -> !fusion.tensor<f32[4]> {
  %y = hir.post_on_stream @g_unit0(%x) : (!fusion.tensor<f32[4]>) -> !fusion.tensor<f32[4]>
  hir.return %y : !fusion.tensor<f32[4]>
}
fusion.func @g_unit0(%x: !fusion.tensor<f32[4]>) -> !fusion.tensor<f32[4]> {
  %y = fusion.neg %x : !fusion.tensor<f32[4]> -> !fusion.tensor<f32[4]>
  fusion.return %y : !fusion.tensor<f32[4]>
}

// -----

// A fusion with a host program's signature is that program's reference: left as it is,
// even with a stream-parallel input that lowering would refuse.
// CHECK-LABEL: hir.program @main(
// CHECK:       fusion.func @reference(%x: !fusion.tensor<f32[4 stream]>) -> !fusion.tensor<f32[4 stream]> {
// CHECK-NEXT:    %y = fusion.neg %x
hir.program @main(%x: !fusion.tensor<f32[4 stream]>) -> !fusion.tensor<f32[4 stream]> {
  %o = hir.allocate : !fusion.tensor<f32[4 stream]>
  %y = fusion.neg %x into %o : !fusion.tensor<f32[4 stream]> -> !fusion.tensor<f32[4 stream]>
  hir.return %y : !fusion.tensor<f32[4 stream]>
}
fusion.func @reference(%x: !fusion.tensor<f32[4 stream]>) -> !fusion.tensor<f32[4 stream]> {
  %y = fusion.neg %x : !fusion.tensor<f32[4 stream]> -> !fusion.tensor<f32[4 stream]>
  fusion.return %y : !fusion.tensor<f32[4 stream]>
}
