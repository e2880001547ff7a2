// RUN: HOSTIR_ROUNDTRIP
// RUN: HOSTIR_GENERIC_ROUNDTRIP

// CHECK: %a = hir.allocate : !fusion.tensor<f32[8 stream, 64]>
%a = hir.allocate : !fusion.tensor<f32[8   stream, 64]>
