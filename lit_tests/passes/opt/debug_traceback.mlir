// RUN: not hostir-opt %s --debug 2>&1 | filecheck %s

// --debug shows the Python traceback of an error instead of the one-line diagnostic.
// CHECK: Traceback (most recent call last):
// CHECK: HostIRError: {{.*}}debug_traceback.mlir:[[# @LINE + 2]]:3: error: 'fusion.exp' op result axes [4] do not match the expected [8]
fusion.func @f(%a: !fusion.tensor<f32[8]>) {
  %b = fusion.exp %a : !fusion.tensor<f32[8]> -> !fusion.tensor<f32[4]>
  fusion.return
}
