// RUN: hostir-opt %s --split-input-file --verify-diagnostics | filecheck %s

// With --verify-diagnostics, errors go to stdout and the exit code is 0 (lit fails a RUN
// line that exits non-zero); chunks without errors are printed as usual.

// CHECK: builtin.module {
// CHECK-NEXT: %a = hir.allocate : !fusion.tensor<f32[8]>
// CHECK-NEXT: }
%a = hir.allocate : !fusion.tensor<f32[8]>
// -----
// CHECK: // {{-----}}
// CHECK-NEXT: {{.*}}verify_diagnostics.mlir:[[# @LINE + 2]]:1: error: 'hir.allgather' op team must not be empty
%x = hir.allocate : !fusion.tensor<f32[4]>
%w = hir.allgather %x -> %x team [] : !fusion.tensor<f32[4]> -> !fusion.tensor<f32[4]>
