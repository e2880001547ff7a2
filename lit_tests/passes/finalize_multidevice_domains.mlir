// RUN: hostir-opt %s --split-input-file -p finalize-multidevice-domains | filecheck %s

// StreamTest.ShardedAllocation (nvFuser #5353): every tensor is split on axis 0 by
// Stream. Fusion inputs and outputs are allocated whole; %tv1, whose consumers keep its
// Stream axis, is allocated one stream chunk at a time.
// CHECK-LABEL: fusion.func @sharded_allocation(%tv0: !fusion.tensor<f32[8(2 stream, 4), 4, 6]>)
// CHECK-SAME:    -> (!fusion.tensor<f32[8(2 stream, 4), 4, r6]>, !fusion.tensor<f32[8(2 stream, 4), 4, 6]>) {
// CHECK-NEXT:    %one = arith.constant
// CHECK-NEXT:    %tv1 = fusion.add %tv0, %one : !fusion.tensor<f32[8(2 stream, 4), 4, 6]>, f32 -> !fusion.tensor<f32[8(2 stream, 4), 4, 6], alloc=[0 stream, 1, 2]>
// CHECK-NEXT:    %tv2 = fusion.reduce sum %tv1 dims [2] : !fusion.tensor<f32[8(2 stream, 4), 4, 6], alloc=[0 stream, 1, 2]> -> !fusion.tensor<f32[8(2 stream, 4), 4, r6]>
// CHECK-NEXT:    %two = arith.constant
// CHECK-NEXT:    %tv3 = fusion.div %tv1, %two : !fusion.tensor<f32[8(2 stream, 4), 4, 6], alloc=[0 stream, 1, 2]>, f32 -> !fusion.tensor<f32[8(2 stream, 4), 4, 6]>
// CHECK-NEXT:    fusion.return %tv2, %tv3 : !fusion.tensor<f32[8(2 stream, 4), 4, r6]>, !fusion.tensor<f32[8(2 stream, 4), 4, 6]>
fusion.func @sharded_allocation(%tv0: !fusion.tensor<f32[8(2 stream, 4), 4, 6]>) -> (!fusion.tensor<f32[8(2 stream, 4), 4, r6]>, !fusion.tensor<f32[8(2 stream, 4), 4, 6]>) {
  %one = arith.constant 1.0 : f32
  %tv1 = fusion.add %tv0, %one : !fusion.tensor<f32[8(2 stream, 4), 4, 6]>, f32 -> !fusion.tensor<f32[8(2 stream, 4), 4, 6]>
  %tv2 = fusion.reduce sum %tv1 dims [2] : !fusion.tensor<f32[8(2 stream, 4), 4, 6]> -> !fusion.tensor<f32[8(2 stream, 4), 4, r6]>
  %two = arith.constant 2.0 : f32
  %tv3 = fusion.div %tv1, %two : !fusion.tensor<f32[8(2 stream, 4), 4, 6]>, f32 -> !fusion.tensor<f32[8(2 stream, 4), 4, 6]>
  fusion.return %tv2, %tv3 : !fusion.tensor<f32[8(2 stream, 4), 4, r6]>, !fusion.tensor<f32[8(2 stream, 4), 4, 6]>
}

// -----

// StreamTest.ReplicatedAllocation: the same, but %tv2 is split by Stream on axis 1, so
// %tv1 has a consumer with a different Stream sharding: every tensor is allocated whole.
// CHECK-LABEL: fusion.func @replicated_allocation
// CHECK-NOT:     alloc=
// CHECK:         fusion.return
fusion.func @replicated_allocation(%tv0: !fusion.tensor<f32[8(2 stream, 4), 4, 6]>) -> (!fusion.tensor<f32[8, 4(2 stream, 2), r6]>, !fusion.tensor<f32[8(2 stream, 4), 4, 6]>) {
  %one = arith.constant 1.0 : f32
  %tv1 = fusion.add %tv0, %one : !fusion.tensor<f32[8(2 stream, 4), 4, 6]>, f32 -> !fusion.tensor<f32[8(2 stream, 4), 4, 6]>
  %tv2 = fusion.reduce sum %tv1 dims [2] : !fusion.tensor<f32[8(2 stream, 4), 4, 6]> -> !fusion.tensor<f32[8, 4(2 stream, 2), r6]>
  %two = arith.constant 2.0 : f32
  %tv3 = fusion.div %tv1, %two : !fusion.tensor<f32[8(2 stream, 4), 4, 6]>, f32 -> !fusion.tensor<f32[8(2 stream, 4), 4, 6]>
  fusion.return %tv2, %tv3 : !fusion.tensor<f32[8, 4(2 stream, 2), r6]>, !fusion.tensor<f32[8(2 stream, 4), 4, 6]>
}

// -----

// A resharding set inheriting its consumer's Stream axis (AG_before_Matmul): the gathered
// buffer lives inside the stream loop; the device-sharded input is untouched (DID pieces
// are always sharded in the allocation); a user's stale `alloc` stream marker on a fusion
// input is dropped, and the signature follows.
// CHECK-LABEL: fusion.func @ag_before_matmul(%a: !fusion.tensor<f32[4 stream, 2 didx, 8, 16], mesh=[0, 1]>, %b: !fusion.tensor<f32[16, 32], mesh=[0, 1]>)
// CHECK-NEXT:    %t = fusion.set %a : !fusion.tensor<f32[4 stream, 2 didx, 8, 16], mesh=[0, 1]> -> !fusion.tensor<f32[4 stream, 2, 8, 16], mesh=[0, 1], alloc=[0 stream, 1, 2, 3]>
// CHECK-NEXT:    %c = fusion.matmul %t, %b : !fusion.tensor<f32[4 stream, 2, 8, 16], mesh=[0, 1], alloc=[0 stream, 1, 2, 3]>, !fusion.tensor<f32[16, 32], mesh=[0, 1]> -> !fusion.tensor<f32[4 stream, 2, 8, 32, r16], mesh=[0, 1]>
fusion.func @ag_before_matmul(%a: !fusion.tensor<f32[4 stream, 2 didx, 8, 16], mesh=[0, 1], alloc=[0 stream, 1, 2, 3]>, %b: !fusion.tensor<f32[16, 32], mesh=[0, 1]>) -> !fusion.tensor<f32[4 stream, 2, 8, 32, r16], mesh=[0, 1]> {
  %t = fusion.set %a : !fusion.tensor<f32[4 stream, 2 didx, 8, 16], mesh=[0, 1], alloc=[0 stream, 1, 2, 3]> -> !fusion.tensor<f32[4 stream, 2, 8, 16], mesh=[0, 1]>
  %c = fusion.matmul %t, %b : !fusion.tensor<f32[4 stream, 2, 8, 16], mesh=[0, 1]>, !fusion.tensor<f32[16, 32], mesh=[0, 1]> -> !fusion.tensor<f32[4 stream, 2, 8, 32, r16], mesh=[0, 1]>
  fusion.return %c : !fusion.tensor<f32[4 stream, 2, 8, 32, r16], mesh=[0, 1]>
}

// -----

// A consumer that streams over another axis (here the permute's result streams over
// what was %y's axis 1) forces a whole allocation; an unused intermediate and a
// consumer whose Stream axis is the same logical axis moved by a permute do not.
// CHECK-LABEL: fusion.func @consumers
// CHECK-NEXT:    %y = fusion.relu %x : {{.*}} -> !fusion.tensor<f32[8 stream, 4]>
// CHECK-NEXT:    %p = fusion.permute %y dims [1, 0] : {{.*}} -> !fusion.tensor<f32[4 stream, 8]>
// CHECK-NEXT:    %u = fusion.exp %x : {{.*}} -> !fusion.tensor<f32[8 stream, 4], alloc=[0 stream, 1]>
// CHECK-NEXT:    %z = fusion.relu %x : {{.*}} -> !fusion.tensor<f32[8 stream, 4], alloc=[0 stream, 1]>
// CHECK-NEXT:    %q = fusion.permute %z dims [1, 0] : !fusion.tensor<f32[8 stream, 4], alloc=[0 stream, 1]> -> !fusion.tensor<f32[4, 8 stream]>
fusion.func @consumers(%x: !fusion.tensor<f32[8 stream, 4]>) -> (!fusion.tensor<f32[4 stream, 8]>, !fusion.tensor<f32[4, 8 stream]>) {
  %y = fusion.relu %x : !fusion.tensor<f32[8 stream, 4]> -> !fusion.tensor<f32[8 stream, 4]>
  %p = fusion.permute %y dims [1, 0] : !fusion.tensor<f32[8 stream, 4]> -> !fusion.tensor<f32[4 stream, 8]>
  %u = fusion.exp %x : !fusion.tensor<f32[8 stream, 4]> -> !fusion.tensor<f32[8 stream, 4]>
  %z = fusion.relu %x : !fusion.tensor<f32[8 stream, 4]> -> !fusion.tensor<f32[8 stream, 4]>
  %q = fusion.permute %z dims [1, 0] : !fusion.tensor<f32[8 stream, 4]> -> !fusion.tensor<f32[4, 8 stream]>
  fusion.return %p, %q : !fusion.tensor<f32[4 stream, 8]>, !fusion.tensor<f32[4, 8 stream]>
}
