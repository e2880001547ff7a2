// RUN: hostir-opt %s --split-input-file -p 'decompose-reshardings{insert-after=true}' | filecheck %s

// AG_after_Matmul (tests/cpp/test_multidevice_stream_parallel_type.cpp; nvFuser's
// InsertReshardingAfter): the matmul computes on A's sharding (and keeps its Stream
// axis), a set after it gathers the result.
// CHECK-LABEL: fusion.func @ag_after_matmul(
// CHECK-SAME:    -> (!fusion.tensor<f32[4 stream, 2, 8, 32], mesh=[0, 1]>, !fusion.tensor<f32[4, 2, 8, 32], mesh=[0, 1]>) {
// CHECK-NEXT:    %c = fusion.matmul %a, %b : !fusion.tensor<f32[4, 2 didx, 8, 16], mesh=[0, 1]>, !fusion.tensor<f32[16, 32], mesh=[0, 1]> -> !fusion.tensor<f32[4 stream, 2 didx, 8, 32, r16], mesh=[0, 1]>
// CHECK-NEXT:    %[[SET:.*]] = fusion.set %c : !fusion.tensor<f32[4 stream, 2 didx, 8, 32, r16], mesh=[0, 1]> -> !fusion.tensor<f32[4 stream, 2, 8, 32], mesh=[0, 1]>
// CHECK-NEXT:    %r = fusion.relu %[[SET]]
// CHECK-NEXT:    fusion.return %[[SET]], %r : !fusion.tensor<f32[4 stream, 2, 8, 32], mesh=[0, 1]>, !fusion.tensor<f32[4, 2, 8, 32], mesh=[0, 1]>
fusion.func @ag_after_matmul(%a: !fusion.tensor<f32[4, 2 didx, 8, 16], mesh=[0, 1]>, %b: !fusion.tensor<f32[16, 32], mesh=[0, 1]>) -> (!fusion.tensor<f32[4 stream, 2, 8, 32, r16], mesh=[0, 1]>, !fusion.tensor<f32[4, 2, 8, 32], mesh=[0, 1]>) {
  %c = fusion.matmul %a, %b : !fusion.tensor<f32[4, 2 didx, 8, 16], mesh=[0, 1]>, !fusion.tensor<f32[16, 32], mesh=[0, 1]> -> !fusion.tensor<f32[4 stream, 2, 8, 32, r16], mesh=[0, 1]>
  %r = fusion.relu %c : !fusion.tensor<f32[4 stream, 2, 8, 32, r16], mesh=[0, 1]> -> !fusion.tensor<f32[4, 2, 8, 32], mesh=[0, 1]>
  fusion.return %c, %r : !fusion.tensor<f32[4 stream, 2, 8, 32, r16], mesh=[0, 1]>, !fusion.tensor<f32[4, 2, 8, 32], mesh=[0, 1]>
}

// -----

// Several inputs sharded differently: the op takes its most parallel input's sharding,
// the other input is resharded before it, and the result is resharded after it.
// CHECK-LABEL: fusion.func @after_and_before
// CHECK-NEXT:    %0 = fusion.set %b : !fusion.tensor<f32[8, 4], mesh=[0, 1]> -> !fusion.tensor<f32[8(2 didx, 4), 4], mesh=[0, 1]>
// CHECK-NEXT:    %c = fusion.add %a, %0 : {{.*}} -> !fusion.tensor<f32[8(2 didx, 4), 4], mesh=[0, 1]>
// CHECK-NEXT:    %{{.*}} = fusion.set %c : !fusion.tensor<f32[8(2 didx, 4), 4], mesh=[0, 1]> -> !fusion.tensor<f32[8, 4(2 didx, 2)], mesh=[0, 1]>
fusion.func @after_and_before(%a: !fusion.tensor<f32[8(2 didx, 4), 4], mesh=[0, 1]>, %b: !fusion.tensor<f32[8, 4], mesh=[0, 1]>) -> !fusion.tensor<f32[8, 4(2 didx, 2)], mesh=[0, 1]> {
  %c = fusion.add %a, %b : !fusion.tensor<f32[8(2 didx, 4), 4], mesh=[0, 1]>, !fusion.tensor<f32[8, 4], mesh=[0, 1]> -> !fusion.tensor<f32[8, 4(2 didx, 2)], mesh=[0, 1]>
  fusion.return %c : !fusion.tensor<f32[8, 4(2 didx, 2)], mesh=[0, 1]>
}
