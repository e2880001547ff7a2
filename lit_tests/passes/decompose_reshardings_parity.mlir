// RUN: hostir-opt %s --split-input-file -p decompose-reshardings | filecheck %s

// The decompositions of the ops and schedules of nvFuser's multi-device tests (issue 28).

// A mean over a device-parallel axis is a sum (rFactored: a local sum, then one over the
// devices) times 1/N.
// CHECK-LABEL: fusion.func @mean
// CHECK:      %1 = fusion.reduce sum %0 dims [2] : {{.*}} -> !fusion.tensor<f32[4, 2 didx, r3], mesh=[0, 1]>
// CHECK-NEXT: %2 = fusion.reduce sum %1 dims [1] : {{.*}} -> !fusion.tensor<f32[4, r2], mesh=[0, 1]>
// CHECK-NEXT: %3 = arith.constant 0.16666666666666666 : f64
// CHECK-NEXT: %m = fusion.mul %2, %3
fusion.func @mean(%x: !fusion.tensor<f32[4, 6(2 didx, 3)], mesh=[0, 1]>) -> !fusion.tensor<f32[4, r6], mesh=[0, 1]> {
  %m = fusion.mean %x dims [1] : !fusion.tensor<f32[4, 6(2 didx, 3)], mesh=[0, 1]> -> !fusion.tensor<f32[4, r6], mesh=[0, 1]>
  fusion.return %m : !fusion.tensor<f32[4, r6], mesh=[0, 1]>
}
// -----

// A variance over a device-parallel axis takes two passes: the mean, then the sum of
// squared deviations, each rFactored.
// CHECK-LABEL: fusion.func @var
// CHECK:      %5 = fusion.broadcast %4 dims [1]
// CHECK-NEXT: %6 = fusion.sub %x, %5
// CHECK-NEXT: %7 = fusion.mul %6, %6
// CHECK:      %10 = fusion.reduce sum %9 dims [1]
// CHECK-NEXT: %11 = arith.constant 2.000000e-01 : f64
// CHECK-NEXT: %v = fusion.mul %10, %11
fusion.func @var(%x: !fusion.tensor<f32[4, 6(2 didx, 3)], mesh=[0, 1]>) -> !fusion.tensor<f32[4, r6], mesh=[0, 1]> {
  %v = fusion.var %x dims [1] correction 1 : !fusion.tensor<f32[4, 6(2 didx, 3)], mesh=[0, 1]> -> !fusion.tensor<f32[4, r6], mesh=[0, 1]>
  fusion.return %v : !fusion.tensor<f32[4, r6], mesh=[0, 1]>
}
// -----

// Over an axis of dynamic extent the count is summed as well: ones where x is (NaN too),
// in float32, summed over the devices like x; the mean divides in float32, then casts back.
// CHECK-LABEL: fusion.func @mean_dynamic
// CHECK:      %2 = fusion.where %1, %0, %0 : {{.*}} -> !fusion.tensor<f32[?, ?(2 didx, ?)], mesh=[0, 1]>
// CHECK:      %5 = fusion.reduce sum %4 dims [1] : {{.*}} -> !fusion.tensor<f32[?, r2], mesh=[0, 1]>
// CHECK:      %8 = fusion.reduce sum %7 dims [1] : {{.*}} -> !fusion.tensor<bf16[?, r2], mesh=[0, 1]>
// CHECK-NEXT: %9 = fusion.cast %8 : {{.*}} -> !fusion.tensor<f32[?], mesh=[0, 1]>
// CHECK-NEXT: %10 = fusion.div %9, %5
// CHECK-NEXT: %m = fusion.cast %10 : {{.*}} -> !fusion.tensor<bf16[?], mesh=[0, 1]>
fusion.func @mean_dynamic(%x: !fusion.tensor<bf16[?, ?(2 didx, ?)], mesh=[0, 1]>) -> !fusion.tensor<bf16[?, r?(2 didx, ?)], mesh=[0, 1]> {
  %m = fusion.mean %x dims [1] : !fusion.tensor<bf16[?, ?(2 didx, ?)], mesh=[0, 1]> -> !fusion.tensor<bf16[?, r?(2 didx, ?)], mesh=[0, 1]>
  fusion.return %m : !fusion.tensor<bf16[?, r?(2 didx, ?)], mesh=[0, 1]>
}
// -----

// A variance over an axis of dynamic extent divides by the count less the correction.
// CHECK-LABEL: fusion.func @var_dynamic
// CHECK:      %5 = fusion.reduce sum %4 dims [1] : {{.*}} -> !fusion.tensor<f32[4, r2], mesh=[0, 1]>
// CHECK:      %16 = arith.constant 1.000000e+00 : f64
// CHECK-NEXT: %17 = fusion.sub %5, %16
// CHECK-NEXT: %v = fusion.div %15, %17
fusion.func @var_dynamic(%x: !fusion.tensor<f32[4, ?(2 didx, ?)], mesh=[0, 1]>) -> !fusion.tensor<f32[4, r?(2 didx, ?)], mesh=[0, 1]> {
  %v = fusion.var %x dims [1] correction 1 : !fusion.tensor<f32[4, ?(2 didx, ?)], mesh=[0, 1]> -> !fusion.tensor<f32[4, r?(2 didx, ?)], mesh=[0, 1]>
  fusion.return %v : !fusion.tensor<f32[4, r?(2 didx, ?)], mesh=[0, 1]>
}
// -----

// A grouped GEMM over a device-parallel K: each device's K block is a batch entry of the
// partial, then a sum over the devices.
// CHECK-LABEL: fusion.func @grouped
// CHECK:      %4 = fusion.grouped_mm %1, %3, %o groups m : !fusion.tensor<bf16[2 didx, 12, 8], mesh=[0, 1]>, !fusion.tensor<bf16[2 didx, 3, 8, 8], mesh=[0, 1]>, !fusion.tensor<i32[3], mesh=[0, 1]> -> !fusion.tensor<bf16[2 didx, 12, 8, r8], mesh=[0, 1]>
// CHECK-NEXT: %c = fusion.reduce sum %4 dims [0] : {{.*}} -> !fusion.tensor<bf16[r2, 12, 8], mesh=[0, 1]>
fusion.func @grouped(%a: !fusion.tensor<bf16[12, 16(2 didx, 8)], mesh=[0, 1]>, %b: !fusion.tensor<bf16[3, 16(2 didx, 8), 8], mesh=[0, 1]>, %o: !fusion.tensor<i32[3], mesh=[0, 1]>) -> !fusion.tensor<bf16[12, 8], mesh=[0, 1]> {
  %c = fusion.grouped_mm %a, %b, %o groups m : !fusion.tensor<bf16[12, 16(2 didx, 8)], mesh=[0, 1]>, !fusion.tensor<bf16[3, 16(2 didx, 8), 8], mesh=[0, 1]>, !fusion.tensor<i32[3], mesh=[0, 1]> -> !fusion.tensor<bf16[12, 8, r16(2 didx, 8)], mesh=[0, 1]>
  %d = fusion.set %c : !fusion.tensor<bf16[12, 8, r16(2 didx, 8)], mesh=[0, 1]> -> !fusion.tensor<bf16[12, 8], mesh=[0, 1]>
  fusion.return %d : !fusion.tensor<bf16[12, 8], mesh=[0, 1]>
}
// -----

// nvFuser's request for a reduce-scatter: DIDx on the contracted axis and on axis 0 of
// the result. The partial keeps D, the final sum scatters axis 0.
// CHECK-LABEL: fusion.func @reduce_scatter
// CHECK:      %4 = fusion.matmul %2, %3 : {{.*}} -> !fusion.tensor<f32[2 didx, 4, 6, r4], mesh=[0, 1]>
// CHECK-NEXT: %y = fusion.reduce sum %4 dims [0] : {{.*}} -> !fusion.tensor<f32[r2, 4(2 didx, 2), 6], mesh=[0, 1]>
fusion.func @reduce_scatter(%x: !fusion.tensor<f32[4, 8(2 didx, 4)], mesh=[0, 1]>, %w: !fusion.tensor<f32[6, 8(2 didx, 4)], mesh=[0, 1]>) -> !fusion.tensor<f32[4(2 didx, 2), 6, r8(2 didx, 4)], mesh=[0, 1]> {
  %y = fusion.linear %x, %w : !fusion.tensor<f32[4, 8(2 didx, 4)], mesh=[0, 1]>, !fusion.tensor<f32[6, 8(2 didx, 4)], mesh=[0, 1]> -> !fusion.tensor<f32[4(2 didx, 2), 6, r8(2 didx, 4)], mesh=[0, 1]>
  fusion.return %y : !fusion.tensor<f32[4(2 didx, 2), 6, r8(2 didx, 4)], mesh=[0, 1]>
}
// -----

// A set changing DIDx, DIDy and DIDz on a 3-D mesh: one set per type, DIDx first.
// CHECK-LABEL: fusion.func @three_types
// CHECK:      %0 = fusion.set %x : {{.*}} -> !fusion.tensor<f32[2 didz, 2 didy, 2], mesh={{.*}}>
// CHECK-NEXT: %1 = fusion.set %0 : {{.*}} -> !fusion.tensor<f32[2 didz, 2, 2], mesh={{.*}}>
// CHECK-NEXT: %y = fusion.set %1 : {{.*}} -> !fusion.tensor<f32[2, 2, 2], mesh={{.*}}>
fusion.func @three_types(%x: !fusion.tensor<f32[2 didz, 2 didy, 2 didx], mesh=[[[0, 1], [2, 3]], [[4, 5], [6, 7]]]>) -> !fusion.tensor<f32[2, 2, 2], mesh=[[[0, 1], [2, 3]], [[4, 5], [6, 7]]]> {
  %y = fusion.set %x : !fusion.tensor<f32[2 didz, 2 didy, 2 didx], mesh=[[[0, 1], [2, 3]], [[4, 5], [6, 7]]]> -> !fusion.tensor<f32[2, 2, 2], mesh=[[[0, 1], [2, 3]], [[4, 5], [6, 7]]]>
  fusion.return %y : !fusion.tensor<f32[2, 2, 2], mesh=[[[0, 1], [2, 3]], [[4, 5], [6, 7]]]>
}
