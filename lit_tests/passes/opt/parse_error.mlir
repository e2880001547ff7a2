// RUN: not hostir-opt %s 2>&1 | filecheck %s

// A syntax error: one located diagnostic with the source line and a caret, exit code 1,
// no Python traceback and no IR printed.

// CHECK-NOT: Traceback
// CHECK: {{.*}}parse_error.mlir:[[# @LINE + 5]]:45: error: ']' expected
// CHECK-NEXT: %b = fusion.neg %a : !fusion.tensor<f32[8, 4> -> !fusion.tensor<f32[8, 4]>
// CHECK-NEXT: {{^ +\^$}}
// CHECK-NOT: builtin.module
fusion.func @f(%a: !fusion.tensor<f32[8, 4]>) {
%b = fusion.neg %a : !fusion.tensor<f32[8, 4> -> !fusion.tensor<f32[8, 4]>
  fusion.return
}
