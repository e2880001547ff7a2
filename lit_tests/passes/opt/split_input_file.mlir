// RUN: not hostir-opt %s --split-input-file 2> %t.err | filecheck %s
// RUN: filecheck %s --input-file %t.err --check-prefix=ERROR

// Each chunk is a module of its own, printed in order with the separator between them.
// An error in one chunk (without --verify-diagnostics) stops there, located in the whole
// file, with exit code 1; later chunks are not printed.

// CHECK: builtin.module {
// CHECK-NEXT: %a = hir.allocate : !fusion.tensor<f32[8]>
// CHECK-NEXT: }
// CHECK: // {{-----}}
// CHECK-NEXT: builtin.module {
// CHECK-NEXT: %a = hir.allocate : !fusion.tensor<f32[4, 4]>
// CHECK-NEXT: }
// CHECK: // {{-----}}
// CHECK-NOT: f32[2]
// ERROR-NOT: Traceback
// ERROR: {{.*}}split_input_file.mlir:[[# @LINE + 9]]:35: error: invalid tensor type: 2 stream axes; at most one is allowed
// ERROR-NOT: Traceback
%a = hir.allocate : !fusion.tensor<f32[8]>
// -----
// The same SSA name in another chunk is fine: chunks do not share a scope.
%a = hir.allocate : !fusion.tensor<f32[4, 4]>
// -----


%a = hir.allocate : !fusion.tensor<f32[8 stream, 4 stream]>
// -----
%a = hir.allocate : !fusion.tensor<f32[2]>
