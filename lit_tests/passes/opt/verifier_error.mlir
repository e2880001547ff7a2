// RUN: not hostir-opt %s 2>&1 | filecheck %s

// IR that parses but does not verify: `file:line:col: error: 'op' op reason`, exit code 1,
// no traceback, no IR printed.

// CHECK-NOT: Traceback
// CHECK: {{.*}}verifier_error.mlir:[[# @LINE + 4]]:3: error: 'fusion.matmul' op inner dimensions do not match: a has K=4, b has K=8
// CHECK-NOT: Traceback
// CHECK-NOT: builtin.module
fusion.func @f(%a: !fusion.tensor<f32[8, 4]>, %b: !fusion.tensor<f32[8, 2]>) {
  %c = fusion.matmul %a, %b : !fusion.tensor<f32[8, 4]>, !fusion.tensor<f32[8, 2]> -> !fusion.tensor<f32[8, 2, r4]>
  fusion.return
}
