// RUN: not hostir-opt %s -p no-such-pass 2>&1 | filecheck %s
// RUN: not hostir-opt %s -p "hostir-lower{fast=true}" 2>&1 | filecheck %s --check-prefix=PIPELINE

// A pass name the registry does not know: one line listing the passes, exit code 1.
// CHECK: error: unknown pass 'no-such-pass'; available: {{.*}}decompose-reshardings{{.*}}hostir-lower{{.*}}propagate-shardings{{.*}}stream-parallel-type
// CHECK-NOT: Traceback

// A pipeline's options go to the member passes that declare them; one no member declares
// is an error.
// PIPELINE: error: pipeline hostir-lower has no pass with option(s) fast
// PIPELINE-NOT: Traceback
%a = hir.allocate : !fusion.tensor<f32[8]>
