// RUN: hostir-opt %s -o %t
// RUN: filecheck %s --input-file %t

// -o writes the IR to the named file (that stdout stays empty is checked in tests/passes/test_opt.py).

// CHECK: builtin.module {
// CHECK-NEXT: %a = hir.allocate : !fusion.tensor<f32[8 stream, 64]>
// CHECK-NEXT: }
%a = hir.allocate : !fusion.tensor<f32[8 stream, 64]>
