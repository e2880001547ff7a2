// RUN: hostir-opt %s --split-input-file -p decompose-reshardings | filecheck %s

// rFactor of a reduction over a split device axis: a local view exposing the device
// axis, a local partial sum, then a reduction of the device axis alone (an Allreduce).
// The returned value's type changes, and the signature with it.
// CHECK-LABEL: fusion.func @rfactor_reduce(%x: !fusion.tensor<f32[4, 8(2 didx, 4)], mesh=[0, 1]>) -> !fusion.tensor<f32[4, r2], mesh=[0, 1]> {
// CHECK-NEXT:    %0 = fusion.reshape %x : !fusion.tensor<f32[4, 8(2 didx, 4)], mesh=[0, 1]> -> !fusion.tensor<f32[4, 2 didx, 4], mesh=[0, 1]>
// CHECK-NEXT:    %1 = fusion.reduce sum %0 dims [2] : !fusion.tensor<f32[4, 2 didx, 4], mesh=[0, 1]> -> !fusion.tensor<f32[4, 2 didx, r4], mesh=[0, 1]>
// CHECK-NEXT:    %c = fusion.reduce sum %1 dims [1] : !fusion.tensor<f32[4, 2 didx, r4], mesh=[0, 1]> -> !fusion.tensor<f32[4, r2], mesh=[0, 1]>
// CHECK-NEXT:    fusion.return %c : !fusion.tensor<f32[4, r2], mesh=[0, 1]>
fusion.func @rfactor_reduce(%x: !fusion.tensor<f32[4, 8(2 didx, 4)], mesh=[0, 1]>) -> !fusion.tensor<f32[4, r8(2 didx, 4)], mesh=[0, 1]> {
  %c = fusion.reduce sum %x dims [1] : !fusion.tensor<f32[4, 8(2 didx, 4)], mesh=[0, 1]> -> !fusion.tensor<f32[4, r8(2 didx, 4)], mesh=[0, 1]>
  fusion.return %c : !fusion.tensor<f32[4, r8(2 didx, 4)], mesh=[0, 1]>
}

// -----

// A whole device axis reduced with another axis: no reshape; the kind is kept.
// CHECK-LABEL: fusion.func @rfactor_whole_axis
// CHECK-NEXT:    %0 = fusion.reduce max %x dims [2] : !fusion.tensor<f32[2 didx, 4, 8], mesh=[0, 1]> -> !fusion.tensor<f32[2 didx, 4, r8], mesh=[0, 1]>
// CHECK-NEXT:    %c = fusion.reduce max %0 dims [0] : !fusion.tensor<f32[2 didx, 4, r8], mesh=[0, 1]> -> !fusion.tensor<f32[r2, 4], mesh=[0, 1]>
// CHECK-NEXT:    %d = fusion.neg %c : !fusion.tensor<f32[r2, 4], mesh=[0, 1]> -> !fusion.tensor<f32[4], mesh=[0, 1]>
fusion.func @rfactor_whole_axis(%x: !fusion.tensor<f32[2 didx, 4, 8], mesh=[0, 1]>) -> !fusion.tensor<f32[4], mesh=[0, 1]> {
  %c = fusion.reduce max %x dims [0, 2] : !fusion.tensor<f32[2 didx, 4, 8], mesh=[0, 1]> -> !fusion.tensor<f32[r2, 4, r8], mesh=[0, 1]>
  %d = fusion.neg %c : !fusion.tensor<f32[r2, 4, r8], mesh=[0, 1]> -> !fusion.tensor<f32[4], mesh=[0, 1]>
  fusion.return %d : !fusion.tensor<f32[4], mesh=[0, 1]>
}

// -----

// The result sharded on another axis: the final reduction is a ReduceScatter.
// CHECK-LABEL: fusion.func @rfactor_reduce_scatter
// CHECK-NEXT:    %0 = fusion.reshape %x : {{.*}} -> !fusion.tensor<f32[8, 2 didx, 4], mesh=[0, 1]>
// CHECK-NEXT:    %1 = fusion.reduce sum %0 dims [2] : {{.*}} -> !fusion.tensor<f32[8, 2 didx, r4], mesh=[0, 1]>
// CHECK-NEXT:    %c = fusion.reduce sum %1 dims [1] : {{.*}} -> !fusion.tensor<f32[8(2 didx, 4), r2], mesh=[0, 1]>
fusion.func @rfactor_reduce_scatter(%x: !fusion.tensor<f32[8, 8(2 didx, 4)], mesh=[0, 1]>) -> !fusion.tensor<f32[8(2 didx, 4), r8], mesh=[0, 1]> {
  %c = fusion.reduce sum %x dims [1] : !fusion.tensor<f32[8, 8(2 didx, 4)], mesh=[0, 1]> -> !fusion.tensor<f32[8(2 didx, 4), r8], mesh=[0, 1]>
  fusion.return %c : !fusion.tensor<f32[8(2 didx, 4), r8], mesh=[0, 1]>
}

// -----

// A reduction over both axes of a 2-D mesh: one reduction per device axis. DIDy first
// (an all-reduce along each column); DIDx, which the result keeps on another axis, last
// (a reduce-scatter along each row).
// CHECK-LABEL: fusion.func @reduce_both_mesh_axes
// CHECK-NEXT:    %0 = fusion.reduce sum %x dims [0] : {{.*}} -> !fusion.tensor<f32[r2, 2 didx, 8], mesh=[[0, 1], [2, 3]]>
// CHECK-NEXT:    %c = fusion.reduce sum %0 dims [0] : {{.*}} -> !fusion.tensor<f32[r2, 8(2 didx, 4)], mesh=[[0, 1], [2, 3]]>
fusion.func @reduce_both_mesh_axes(%x: !fusion.tensor<f32[2 didy, 2 didx, 8], mesh=[[0, 1], [2, 3]]>) -> !fusion.tensor<f32[r2, r2, 8(2 didx, 4)], mesh=[[0, 1], [2, 3]]> {
  %c = fusion.reduce sum %x dims [0, 1] : !fusion.tensor<f32[2 didy, 2 didx, 8], mesh=[[0, 1], [2, 3]]> -> !fusion.tensor<f32[r2, r2, 8(2 didx, 4)], mesh=[[0, 1], [2, 3]]>
  fusion.return %c : !fusion.tensor<f32[r2, r2, 8(2 didx, 4)], mesh=[[0, 1], [2, 3]]>
}

// -----

// A whole tensor to shards on a mesh with no device in common: no root for a scatter, so
// a broadcast to that mesh, whole, then each device keeps its shard.
// CHECK-LABEL: fusion.func @scatter_from_outside_the_mesh
// CHECK-NEXT:    %0 = fusion.set %a : {{.*}} -> !fusion.tensor<f32[4, 8], mesh=[2, 3]>
// CHECK-NEXT:    %b = fusion.set %0 : {{.*}} -> !fusion.tensor<f32[4(2 didx, 2), 8], mesh=[2, 3]>
fusion.func @scatter_from_outside_the_mesh(%a: !fusion.tensor<f32[4, 8], mesh=[0]>) -> !fusion.tensor<f32[4(2 didx, 2), 8], mesh=[2, 3]> {
  %b = fusion.set %a : !fusion.tensor<f32[4, 8], mesh=[0]> -> !fusion.tensor<f32[4(2 didx, 2), 8], mesh=[2, 3]>
  fusion.return %b : !fusion.tensor<f32[4(2 didx, 2), 8], mesh=[2, 3]>
}

// -----

// Shards to shards on a mesh of another size: send/recv pairs no devices, so gathered on
// the first mesh, broadcast whole, and each device of the second keeps its shard.
// CHECK-LABEL: fusion.func @mesh_sizes
// CHECK-NEXT:    %0 = fusion.set %a : {{.*}} -> !fusion.tensor<f32[4, 8], mesh=[0, 1]>
// CHECK-NEXT:    %1 = fusion.set %0 : {{.*}} -> !fusion.tensor<f32[4, 8], mesh=[0, 1, 2, 3]>
// CHECK-NEXT:    %b = fusion.set %1 : {{.*}} -> !fusion.tensor<f32[4 didx, 8], mesh=[0, 1, 2, 3]>
fusion.func @mesh_sizes(%a: !fusion.tensor<f32[4(2 didx, 2), 8], mesh=[0, 1]>) -> !fusion.tensor<f32[4 didx, 8], mesh=[0, 1, 2, 3]> {
  %b = fusion.set %a : !fusion.tensor<f32[4(2 didx, 2), 8], mesh=[0, 1]> -> !fusion.tensor<f32[4 didx, 8], mesh=[0, 1, 2, 3]>
  fusion.return %b : !fusion.tensor<f32[4 didx, 8], mesh=[0, 1, 2, 3]>
}

// -----

// An all-to-all between meshes: the same three steps.
// CHECK-LABEL: fusion.func @all_to_all_meshes
// CHECK-NEXT:    %0 = fusion.set %a : {{.*}} -> !fusion.tensor<f32[2, 8], mesh=[0, 1]>
// CHECK-NEXT:    %1 = fusion.set %0 : {{.*}} -> !fusion.tensor<f32[2, 8], mesh=[2, 3]>
// CHECK-NEXT:    %b = fusion.set %1 : {{.*}} -> !fusion.tensor<f32[2, 8(2 didx, 4)], mesh=[2, 3]>
fusion.func @all_to_all_meshes(%a: !fusion.tensor<f32[2 didx, 8], mesh=[0, 1]>) -> !fusion.tensor<f32[2, 8(2 didx, 4)], mesh=[2, 3]> {
  %b = fusion.set %a : !fusion.tensor<f32[2 didx, 8], mesh=[0, 1]> -> !fusion.tensor<f32[2, 8(2 didx, 4)], mesh=[2, 3]>
  fusion.return %b : !fusion.tensor<f32[2, 8(2 didx, 4)], mesh=[2, 3]>
}

// -----

// Onto a 2-D mesh, sharded along both of its axes: a broadcast, then a local shard per type.
// CHECK-LABEL: fusion.func @scatter_2d
// CHECK-NEXT:    %0 = fusion.set %a : {{.*}} -> !fusion.tensor<f32[2, 8], mesh=[[0, 1], [2, 3]]>
// CHECK-NEXT:    %1 = fusion.set %0 : {{.*}} -> !fusion.tensor<f32[2, 8(2 didx, 4)], mesh=[[0, 1], [2, 3]]>
// CHECK-NEXT:    %b = fusion.set %1 : {{.*}} -> !fusion.tensor<f32[2 didy, 8(2 didx, 4)], mesh=[[0, 1], [2, 3]]>
fusion.func @scatter_2d(%a: !fusion.tensor<f32[2, 8], mesh=[0]>) -> !fusion.tensor<f32[2 didy, 8(2 didx, 4)], mesh=[[0, 1], [2, 3]]> {
  %b = fusion.set %a : !fusion.tensor<f32[2, 8], mesh=[0]> -> !fusion.tensor<f32[2 didy, 8(2 didx, 4)], mesh=[[0, 1], [2, 3]]>
  fusion.return %b : !fusion.tensor<f32[2 didy, 8(2 didx, 4)], mesh=[[0, 1], [2, 3]]>
}

// -----

// A reduce-scatter between meshes: reduced on the input's mesh (an all-reduce), then moved
// as a set between meshes; the result is its value axes.
// CHECK-LABEL: fusion.func @reduce_scatter_meshes
// CHECK-SAME:    -> !fusion.tensor<f32[8(2 didx, 4)], mesh=[2, 3]>
// CHECK-NEXT:    %0 = fusion.reduce sum %a dims [0] : {{.*}} -> !fusion.tensor<f32[r2, 8], mesh=[0, 1]>
// CHECK-NEXT:    %1 = fusion.set %0 : {{.*}} -> !fusion.tensor<f32[8], mesh=[2, 3]>
// CHECK-NEXT:    %b = fusion.set %1 : {{.*}} -> !fusion.tensor<f32[8(2 didx, 4)], mesh=[2, 3]>
fusion.func @reduce_scatter_meshes(%a: !fusion.tensor<f32[2 didx, 8], mesh=[0, 1]>) -> !fusion.tensor<f32[r2, 8(2 didx, 4)], mesh=[2, 3]> {
  %b = fusion.reduce sum %a dims [0] : !fusion.tensor<f32[2 didx, 8], mesh=[0, 1]> -> !fusion.tensor<f32[r2, 8(2 didx, 4)], mesh=[2, 3]>
  fusion.return %b : !fusion.tensor<f32[r2, 8(2 didx, 4)], mesh=[2, 3]>
}
// -----

// Axes traded between DIDx and DIDy on one mesh: no step changes one type alone, so
// gathered whole (one type at a time), then each device keeps its shard (one at a time).
// CHECK-LABEL: fusion.func @trade
// CHECK-NEXT:    %0 = fusion.set %a : {{.*}} -> !fusion.tensor<f32[2 didy, 2, 8], mesh=[[0, 1], [2, 3]]>
// CHECK-NEXT:    %1 = fusion.set %0 : {{.*}} -> !fusion.tensor<f32[2, 2, 8], mesh=[[0, 1], [2, 3]]>
// CHECK-NEXT:    %2 = fusion.set %1 : {{.*}} -> !fusion.tensor<f32[2 didx, 2, 8], mesh=[[0, 1], [2, 3]]>
// CHECK-NEXT:    %b = fusion.set %2 : {{.*}} -> !fusion.tensor<f32[2 didx, 2 didy, 8], mesh=[[0, 1], [2, 3]]>
fusion.func @trade(%a: !fusion.tensor<f32[2 didy, 2 didx, 8], mesh=[[0, 1], [2, 3]]>) -> !fusion.tensor<f32[2 didx, 2 didy, 8], mesh=[[0, 1], [2, 3]]> {
  %b = fusion.set %a : !fusion.tensor<f32[2 didy, 2 didx, 8], mesh=[[0, 1], [2, 3]]> -> !fusion.tensor<f32[2 didx, 2 didy, 8], mesh=[[0, 1], [2, 3]]>
  fusion.return %b : !fusion.tensor<f32[2 didx, 2 didy, 8], mesh=[[0, 1], [2, 3]]>
}
// -----

// Already one communication (reduction of a whole device axis, alone): unchanged.
// CHECK-LABEL: fusion.func @allreduce_unchanged
// CHECK-NEXT:    %c = fusion.reduce sum %x dims [1] : !fusion.tensor<f32[4, 2 didx], mesh=[0, 1]> -> !fusion.tensor<f32[4, r2], mesh=[0, 1]>
// CHECK-NEXT:    fusion.return %c
fusion.func @allreduce_unchanged(%x: !fusion.tensor<f32[4, 2 didx], mesh=[0, 1]>) -> !fusion.tensor<f32[4, r2], mesh=[0, 1]> {
  %c = fusion.reduce sum %x dims [1] : !fusion.tensor<f32[4, 2 didx], mesh=[0, 1]> -> !fusion.tensor<f32[4, r2], mesh=[0, 1]>
  fusion.return %c : !fusion.tensor<f32[4, r2], mesh=[0, 1]>
}

// -----

// K-sharded matmul: batched local matmul over the device axis, then a sum over it.
// The consumer still sees [4, 16].
// CHECK-LABEL: fusion.func @rfactor_matmul
// CHECK-NEXT:    %0 = fusion.reshape %a : !fusion.tensor<f32[4, 8(2 didx, 4)], mesh=[0, 1]> -> !fusion.tensor<f32[4, 2 didx, 4], mesh=[0, 1]>
// CHECK-NEXT:    %1 = fusion.permute %0 dims [1, 0, 2] : !fusion.tensor<f32[4, 2 didx, 4], mesh=[0, 1]> -> !fusion.tensor<f32[2 didx, 4, 4], mesh=[0, 1]>
// CHECK-NEXT:    %2 = fusion.reshape %b : !fusion.tensor<f32[8(2 didx, 4), 16], mesh=[0, 1]> -> !fusion.tensor<f32[2 didx, 4, 16], mesh=[0, 1]>
// CHECK-NEXT:    %3 = fusion.matmul %1, %2 : !fusion.tensor<f32[2 didx, 4, 4], mesh=[0, 1]>, !fusion.tensor<f32[2 didx, 4, 16], mesh=[0, 1]> -> !fusion.tensor<f32[2 didx, 4, 16, r4], mesh=[0, 1]>
// CHECK-NEXT:    %c = fusion.reduce sum %3 dims [0] : !fusion.tensor<f32[2 didx, 4, 16, r4], mesh=[0, 1]> -> !fusion.tensor<f32[r2, 4, 16], mesh=[0, 1]>
// CHECK-NEXT:    %d = fusion.relu %c : !fusion.tensor<f32[r2, 4, 16], mesh=[0, 1]> -> !fusion.tensor<f32[4, 16], mesh=[0, 1]>
fusion.func @rfactor_matmul(%a: !fusion.tensor<f32[4, 8(2 didx, 4)], mesh=[0, 1]>, %b: !fusion.tensor<f32[8(2 didx, 4), 16], mesh=[0, 1]>) -> !fusion.tensor<f32[4, 16], mesh=[0, 1]> {
  %c = fusion.matmul %a, %b : !fusion.tensor<f32[4, 8(2 didx, 4)], mesh=[0, 1]>, !fusion.tensor<f32[8(2 didx, 4), 16], mesh=[0, 1]> -> !fusion.tensor<f32[4, 16, r8(2 didx, 4)], mesh=[0, 1]>
  %d = fusion.relu %c : !fusion.tensor<f32[4, 16, r8(2 didx, 4)], mesh=[0, 1]> -> !fusion.tensor<f32[4, 16], mesh=[0, 1]>
  fusion.return %d : !fusion.tensor<f32[4, 16], mesh=[0, 1]>
}

// -----

// Row-parallel linear with a bias: the weight is transposed, the input's batch axes
// meet a broadcast weight, and the bias is added after the reduction across devices.
// CHECK-LABEL: fusion.func @linear_bias(
// CHECK-SAME:    -> !fusion.tensor<f32[3, 4, 16], mesh=[0, 1]> {
// CHECK-NEXT:    %0 = fusion.permute %w dims [1, 0] : !fusion.tensor<f32[16, 8(2 didx, 4)], mesh=[0, 1]> -> !fusion.tensor<f32[8(2 didx, 4), 16], mesh=[0, 1]>
// CHECK-NEXT:    %1 = fusion.reshape %x : {{.*}} -> !fusion.tensor<f32[3, 4, 2 didx, 4], mesh=[0, 1]>
// CHECK-NEXT:    %2 = fusion.permute %1 dims [2, 0, 1, 3] : {{.*}} -> !fusion.tensor<f32[2 didx, 3, 4, 4], mesh=[0, 1]>
// CHECK-NEXT:    %3 = fusion.reshape %0 : {{.*}} -> !fusion.tensor<f32[2 didx, 4, 16], mesh=[0, 1]>
// CHECK-NEXT:    %4 = fusion.broadcast %3 dims [1] : {{.*}} -> !fusion.tensor<f32[2 didx, b1, 4, 16], mesh=[0, 1]>
// CHECK-NEXT:    %5 = fusion.matmul %2, %4 : {{.*}} -> !fusion.tensor<f32[2 didx, 3, 4, 16, r4], mesh=[0, 1]>
// CHECK-NEXT:    %6 = fusion.reduce sum %5 dims [0] : {{.*}} -> !fusion.tensor<f32[r2, 3, 4, 16], mesh=[0, 1]>
// CHECK-NEXT:    %7 = fusion.broadcast %bias dims [0, 1] : !fusion.tensor<f32[16], mesh=[0, 1]> -> !fusion.tensor<f32[b1, b1, 16], mesh=[0, 1]>
// CHECK-NEXT:    %y = fusion.add %6, %7 : !fusion.tensor<f32[r2, 3, 4, 16], mesh=[0, 1]>, !fusion.tensor<f32[b1, b1, 16], mesh=[0, 1]> -> !fusion.tensor<f32[3, 4, 16], mesh=[0, 1]>
// CHECK-NEXT:    fusion.return %y : !fusion.tensor<f32[3, 4, 16], mesh=[0, 1]>
fusion.func @linear_bias(%x: !fusion.tensor<f32[3, 4, 8(2 didx, 4)], mesh=[0, 1]>, %w: !fusion.tensor<f32[16, 8(2 didx, 4)], mesh=[0, 1]>, %bias: !fusion.tensor<f32[16], mesh=[0, 1]>) -> !fusion.tensor<f32[3, 4, 16, r8(2 didx, 4)], mesh=[0, 1]> {
  %y = fusion.linear %x, %w bias %bias : !fusion.tensor<f32[3, 4, 8(2 didx, 4)], mesh=[0, 1]>, !fusion.tensor<f32[16, 8(2 didx, 4)], mesh=[0, 1]>, !fusion.tensor<f32[16], mesh=[0, 1]> -> !fusion.tensor<f32[3, 4, 16, r8(2 didx, 4)], mesh=[0, 1]>
  fusion.return %y : !fusion.tensor<f32[3, 4, 16, r8(2 didx, 4)], mesh=[0, 1]>
}

// -----

// AG_before_Matmul (tests/cpp/test_multidevice_stream_parallel_type.cpp): a set in front
// of the matmul gathers A; it takes the matmul's Stream axis, so the Allgather lands
// in the stream loop. The replicated B needs nothing.
// CHECK-LABEL: fusion.func @ag_before_matmul
// CHECK-NEXT:    %0 = fusion.set %a : !fusion.tensor<f32[4, 2 didx, 8, 16], mesh=[0, 1]> -> !fusion.tensor<f32[4 stream, 2, 8, 16], mesh=[0, 1]>
// CHECK-NEXT:    %c = fusion.matmul %0, %b : !fusion.tensor<f32[4 stream, 2, 8, 16], mesh=[0, 1]>, !fusion.tensor<f32[16, 32], mesh=[0, 1]> -> !fusion.tensor<f32[4 stream, 2, 8, 32, r16], mesh=[0, 1]>
// CHECK-NEXT:    fusion.return %c
fusion.func @ag_before_matmul(%a: !fusion.tensor<f32[4, 2 didx, 8, 16], mesh=[0, 1]>, %b: !fusion.tensor<f32[16, 32], mesh=[0, 1]>) -> !fusion.tensor<f32[4 stream, 2, 8, 32, r16], mesh=[0, 1]> {
  %c = fusion.matmul %a, %b : !fusion.tensor<f32[4, 2 didx, 8, 16], mesh=[0, 1]>, !fusion.tensor<f32[16, 32], mesh=[0, 1]> -> !fusion.tensor<f32[4 stream, 2, 8, 32, r16], mesh=[0, 1]>
  fusion.return %c : !fusion.tensor<f32[4 stream, 2, 8, 32, r16], mesh=[0, 1]>
}

// -----

// Several inputs: one set per input whose sharding differs from the result's.
// CHECK-LABEL: fusion.func @binary_one_set
// CHECK-NEXT:    %0 = fusion.set %a : !fusion.tensor<f32[8(2 didx, 4), 4], mesh=[0, 1]> -> !fusion.tensor<f32[8, 4], mesh=[0, 1]>
// CHECK-NEXT:    %c = fusion.add %0, %b : !fusion.tensor<f32[8, 4], mesh=[0, 1]>, !fusion.tensor<f32[8, 4], mesh=[0, 1]> -> !fusion.tensor<f32[8, 4], mesh=[0, 1]>
fusion.func @binary_one_set(%a: !fusion.tensor<f32[8(2 didx, 4), 4], mesh=[0, 1]>, %b: !fusion.tensor<f32[8, 4], mesh=[0, 1]>) -> !fusion.tensor<f32[8, 4], mesh=[0, 1]> {
  %c = fusion.add %a, %b : !fusion.tensor<f32[8(2 didx, 4), 4], mesh=[0, 1]>, !fusion.tensor<f32[8, 4], mesh=[0, 1]> -> !fusion.tensor<f32[8, 4], mesh=[0, 1]>
  fusion.return %c : !fusion.tensor<f32[8, 4], mesh=[0, 1]>
}

// -----

// A reduction of an unsharded axis of a sharded input gathers first, then reduces locally.
// CHECK-LABEL: fusion.func @reduce_after_gather
// CHECK-NEXT:    %0 = fusion.set %x : !fusion.tensor<f32[8(2 didx, 4), 8], mesh=[0, 1]> -> !fusion.tensor<f32[8, 8], mesh=[0, 1]>
// CHECK-NEXT:    %c = fusion.reduce sum %0 dims [1] : !fusion.tensor<f32[8, 8], mesh=[0, 1]> -> !fusion.tensor<f32[8, r8], mesh=[0, 1]>
fusion.func @reduce_after_gather(%x: !fusion.tensor<f32[8(2 didx, 4), 8], mesh=[0, 1]>) -> !fusion.tensor<f32[8, r8], mesh=[0, 1]> {
  %c = fusion.reduce sum %x dims [1] : !fusion.tensor<f32[8(2 didx, 4), 8], mesh=[0, 1]> -> !fusion.tensor<f32[8, r8], mesh=[0, 1]>
  fusion.return %c : !fusion.tensor<f32[8, r8], mesh=[0, 1]>
}

// -----

// Nothing to do: sets are communications already, local ops stay, and a batch-sharded
// matmul with a replicated weight computes its shard locally.
// CHECK-LABEL: fusion.func @unchanged
// CHECK-NEXT:    %g = fusion.set %x : !fusion.tensor<f32[2 didx, 8], mesh=[0, 1]> -> !fusion.tensor<f32[2, 8], mesh=[0, 1]>
// CHECK-NEXT:    %e = fusion.exp %x : !fusion.tensor<f32[2 didx, 8], mesh=[0, 1]> -> !fusion.tensor<f32[2 didx, 8], mesh=[0, 1]>
// CHECK-NEXT:    %m = fusion.matmul %e, %w : {{.*}} -> !fusion.tensor<f32[2 didx, 4, r8], mesh=[0, 1]>
// CHECK-NEXT:    fusion.return
fusion.func @unchanged(%x: !fusion.tensor<f32[2 didx, 8], mesh=[0, 1]>, %w: !fusion.tensor<f32[8, 4], mesh=[0, 1]>) -> (!fusion.tensor<f32[2, 8], mesh=[0, 1]>, !fusion.tensor<f32[2 didx, 4, r8], mesh=[0, 1]>) {
  %g = fusion.set %x : !fusion.tensor<f32[2 didx, 8], mesh=[0, 1]> -> !fusion.tensor<f32[2, 8], mesh=[0, 1]>
  %e = fusion.exp %x : !fusion.tensor<f32[2 didx, 8], mesh=[0, 1]> -> !fusion.tensor<f32[2 didx, 8], mesh=[0, 1]>
  %m = fusion.matmul %e, %w : !fusion.tensor<f32[2 didx, 8], mesh=[0, 1]>, !fusion.tensor<f32[8, 4], mesh=[0, 1]> -> !fusion.tensor<f32[2 didx, 4, r8], mesh=[0, 1]>
  fusion.return %g, %m : !fusion.tensor<f32[2, 8], mesh=[0, 1]>, !fusion.tensor<f32[2 didx, 4, r8], mesh=[0, 1]>
}

// -----

// 1-D operands (issue 12, defects 4 and 5): the rFactor gives a 1-D operand its missing
// M or N as a broadcast axis, which a squeeze removes after the reduction, and gives
// the operand with fewer batch axes broadcast ones after D, so that D meets D.
// CHECK-LABEL: fusion.func @linear_rank1
// CHECK:         %2 = fusion.broadcast %1 dims [1] : {{.*}} -> !fusion.tensor<f32[2 didx, b1, 4], mesh=[0, 1]>
// CHECK:         %4 = fusion.matmul %2, %3 : {{.*}} -> !fusion.tensor<f32[2 didx, b1, 4, r4], mesh=[0, 1]>
// CHECK-NEXT:    %5 = fusion.reduce sum %4 dims [0] : {{.*}} -> !fusion.tensor<f32[r2, b1, 4], mesh=[0, 1]>
// CHECK-NEXT:    %y = fusion.squeeze %5 dims [0] : {{.*}} -> !fusion.tensor<f32[4], mesh=[0, 1]>
fusion.func @linear_rank1(%x: !fusion.tensor<f32[8(2 didx, 4)], mesh=[0, 1]>, %w: !fusion.tensor<f32[4, 8(2 didx, 4)], mesh=[0, 1]>) -> !fusion.tensor<f32[4, r8], mesh=[0, 1]> {
  %y = fusion.linear %x, %w : !fusion.tensor<f32[8(2 didx, 4)], mesh=[0, 1]>, !fusion.tensor<f32[4, 8(2 didx, 4)], mesh=[0, 1]> -> !fusion.tensor<f32[4, r8], mesh=[0, 1]>
  fusion.return %y : !fusion.tensor<f32[4, r8], mesh=[0, 1]>
}

// -----

// Gathering along DIDx and DIDy at once: two sets, DIDx first (an allgather per mesh row,
// then one per column).
// CHECK-LABEL: fusion.func @two_changes
// CHECK-NEXT:    %0 = fusion.set %x : !fusion.tensor<f32[2 didy, 2 didx], mesh=[[0, 1], [2, 3]]> -> !fusion.tensor<f32[2 didy, 2], mesh=[[0, 1], [2, 3]]>
// CHECK-NEXT:    %c = fusion.set %0 : !fusion.tensor<f32[2 didy, 2], mesh=[[0, 1], [2, 3]]> -> !fusion.tensor<f32[2, 2], mesh=[[0, 1], [2, 3]]>
fusion.func @two_changes(%x: !fusion.tensor<f32[2 didy, 2 didx], mesh=[[0, 1], [2, 3]]>) -> !fusion.tensor<f32[2, 2], mesh=[[0, 1], [2, 3]]> {
  %c = fusion.set %x : !fusion.tensor<f32[2 didy, 2 didx], mesh=[[0, 1], [2, 3]]> -> !fusion.tensor<f32[2, 2], mesh=[[0, 1], [2, 3]]>
  fusion.return %c : !fusion.tensor<f32[2, 2], mesh=[[0, 1], [2, 3]]>
}

// -----

// CHECK-LABEL: fusion.func @matrix_vector
// CHECK:         %3 = fusion.broadcast %2 dims [2] : {{.*}} -> !fusion.tensor<f32[2 didx, 4, b1], mesh=[0, 1]>
// CHECK-NEXT:    %4 = fusion.matmul %1, %3 : {{.*}} -> !fusion.tensor<f32[2 didx, 3, 1, r4], mesh=[0, 1]>
// CHECK-NEXT:    %5 = fusion.reduce sum %4 dims [0] : {{.*}} -> !fusion.tensor<f32[r2, 3, 1], mesh=[0, 1]>
// CHECK-NEXT:    %c = fusion.squeeze %5 dims [1] : {{.*}} -> !fusion.tensor<f32[3], mesh=[0, 1]>
fusion.func @matrix_vector(%a: !fusion.tensor<f32[3, 8(2 didx, 4)], mesh=[0, 1]>, %b: !fusion.tensor<f32[8(2 didx, 4)], mesh=[0, 1]>) -> !fusion.tensor<f32[3, r8], mesh=[0, 1]> {
  %c = fusion.matmul %a, %b : !fusion.tensor<f32[3, 8(2 didx, 4)], mesh=[0, 1]>, !fusion.tensor<f32[8(2 didx, 4)], mesh=[0, 1]> -> !fusion.tensor<f32[3, r8], mesh=[0, 1]>
  fusion.return %c : !fusion.tensor<f32[3, r8], mesh=[0, 1]>
}

// -----

// With a Stream axis on the result, the first set takes it too: both land in one loop.
// CHECK-LABEL: fusion.func @two_changes_streamed
// CHECK-NEXT:    %0 = fusion.set %x : {{.*}} -> !fusion.tensor<f32[4 stream, 2 didy, 2], mesh=[[0, 1], [2, 3]]>
// CHECK-NEXT:    %c = fusion.set %0 : {{.*}} -> !fusion.tensor<f32[4 stream, 2, 2], mesh=[[0, 1], [2, 3]]>
fusion.func @two_changes_streamed(%x: !fusion.tensor<f32[4, 2 didy, 2 didx], mesh=[[0, 1], [2, 3]]>) -> !fusion.tensor<f32[4 stream, 2, 2], mesh=[[0, 1], [2, 3]]> {
  %c = fusion.set %x : !fusion.tensor<f32[4, 2 didy, 2 didx], mesh=[[0, 1], [2, 3]]> -> !fusion.tensor<f32[4 stream, 2, 2], mesh=[[0, 1], [2, 3]]>
  fusion.return %c : !fusion.tensor<f32[4 stream, 2, 2], mesh=[[0, 1], [2, 3]]>
}

// -----

// CHECK-LABEL: fusion.func @batched_b
// CHECK:         %2 = fusion.broadcast %1 dims [1] : {{.*}} -> !fusion.tensor<f32[2 didx, b1, 3, 4], mesh=[0, 1]>
// CHECK:         %4 = fusion.permute %3 dims [1, 0, 2, 3] : {{.*}} -> !fusion.tensor<f32[2 didx, 5, 4, 6], mesh=[0, 1]>
// CHECK-NEXT:    %5 = fusion.matmul %2, %4 : {{.*}} -> !fusion.tensor<f32[2 didx, 5, 3, 6, r4], mesh=[0, 1]>
// CHECK-NEXT:    %c = fusion.reduce sum %5 dims [0] : {{.*}} -> !fusion.tensor<f32[r2, 5, 3, 6], mesh=[0, 1]>
fusion.func @batched_b(%a: !fusion.tensor<f32[3, 8(2 didx, 4)], mesh=[0, 1]>, %b: !fusion.tensor<f32[5, 8(2 didx, 4), 6], mesh=[0, 1]>) -> !fusion.tensor<f32[5, 3, 6, r8], mesh=[0, 1]> {
  %c = fusion.matmul %a, %b : !fusion.tensor<f32[3, 8(2 didx, 4)], mesh=[0, 1]>, !fusion.tensor<f32[5, 8(2 didx, 4), 6], mesh=[0, 1]> -> !fusion.tensor<f32[5, 3, 6, r8], mesh=[0, 1]>
  fusion.return %c : !fusion.tensor<f32[5, 3, 6, r8], mesh=[0, 1]>
}

// -----

// DIDy moves to the axis DIDx then takes: DIDx first would change nothing (the axis is
// DIDy's until the second set), so DIDy changes first (an all-to-all per mesh column,
// then a scatter per row).
// CHECK-LABEL: fusion.func @didy_first
// CHECK-NEXT:    %0 = fusion.set %x : !fusion.tensor<f32[2 didy, 2, 4], mesh=[[0, 1], [2, 3]]> -> !fusion.tensor<f32[2, 2 didy, 4], mesh=[[0, 1], [2, 3]]>
// CHECK-NEXT:    %c = fusion.set %0 : !fusion.tensor<f32[2, 2 didy, 4], mesh=[[0, 1], [2, 3]]> -> !fusion.tensor<f32[2 didx, 2 didy, 4], mesh=[[0, 1], [2, 3]]>
fusion.func @didy_first(%x: !fusion.tensor<f32[2 didy, 2, 4], mesh=[[0, 1], [2, 3]]>) -> !fusion.tensor<f32[2 didx, 2 didy, 4], mesh=[[0, 1], [2, 3]]> {
  %c = fusion.set %x : !fusion.tensor<f32[2 didy, 2, 4], mesh=[[0, 1], [2, 3]]> -> !fusion.tensor<f32[2 didx, 2 didy, 4], mesh=[[0, 1], [2, 3]]>
  fusion.return %c : !fusion.tensor<f32[2 didx, 2 didy, 4], mesh=[[0, 1], [2, 3]]>
}

// -----

// A reshape splitting an axis whose inner part the result shards (TRIAGE C4: it ran as
// a local reshape of the whole input): no set in front can give it a local input, so
// it computes replicated and a set after it scatters the result.
// CHECK-LABEL: fusion.func @reshape_split_inner_sharded
// CHECK-NEXT:    %b = fusion.reshape %a : !fusion.tensor<f32[2], mesh=[0, 1]> -> !fusion.tensor<f32[1, 2], mesh=[0, 1]>
// CHECK-NEXT:    %b_1 = fusion.set %b : !fusion.tensor<f32[1, 2], mesh=[0, 1]> -> !fusion.tensor<f32[1, 2 didx], mesh=[0, 1]>
// CHECK-NEXT:    fusion.return %b_1
fusion.func @reshape_split_inner_sharded(%a: !fusion.tensor<f32[2], mesh=[0, 1]>) -> !fusion.tensor<f32[1, 2 didx], mesh=[0, 1]> {
  %b = fusion.reshape %a : !fusion.tensor<f32[2], mesh=[0, 1]> -> !fusion.tensor<f32[1, 2 didx], mesh=[0, 1]>
  fusion.return %b : !fusion.tensor<f32[1, 2 didx], mesh=[0, 1]>
}

// -----

// A reduction that also gathers along DIDy gets a set in front (at its location), which
// becomes one set per type; the reduction is then local.
// CHECK-LABEL: fusion.func @reduce_two_changes
// CHECK-NEXT:    %0 = fusion.set %x : {{.*}} -> !fusion.tensor<f32[2 didy, 2], mesh=[[0, 1], [2, 3]]>
// CHECK-NEXT:    %1 = fusion.set %0 : {{.*}} -> !fusion.tensor<f32[2, 2], mesh=[[0, 1], [2, 3]]>
// CHECK-NEXT:    %c = fusion.reduce sum %1 dims [1]
fusion.func @reduce_two_changes(%x: !fusion.tensor<f32[2 didy, 2 didx], mesh=[[0, 1], [2, 3]]>) -> !fusion.tensor<f32[2, r2], mesh=[[0, 1], [2, 3]]> {
  %c = fusion.reduce sum %x dims [1] : !fusion.tensor<f32[2 didy, 2 didx], mesh=[[0, 1], [2, 3]]> -> !fusion.tensor<f32[2, r2], mesh=[[0, 1], [2, 3]]>
  fusion.return %c : !fusion.tensor<f32[2, r2], mesh=[[0, 1], [2, 3]]>
}

// -----

// One communication per value and sharding: the sets inserted in front of %r and %s
// and the user's own %g gather %x the same way, so they are one set, which all three
// consumers share (it takes %g's name); %m needs %x chunked over streams: its own set.
// CHECK-LABEL: fusion.func @shared_resharding
// CHECK-NEXT:    %g = fusion.set %x : !fusion.tensor<f32[2 didx, 8], mesh=[0, 1]> -> !fusion.tensor<f32[2, 8], mesh=[0, 1]>
// CHECK-NEXT:    %r = fusion.relu %g : !fusion.tensor<f32[2, 8], mesh=[0, 1]> -> !fusion.tensor<f32[2, 8], mesh=[0, 1]>
// CHECK-NEXT:    %s = fusion.add %g, %g : {{.*}} -> !fusion.tensor<f32[2, 8], mesh=[0, 1]>
// CHECK-NEXT:    %0 = fusion.set %x : !fusion.tensor<f32[2 didx, 8], mesh=[0, 1]> -> !fusion.tensor<f32[2 stream, 8], mesh=[0, 1]>
// CHECK-NEXT:    %m = fusion.neg %0 : {{.*}}
// CHECK-NEXT:    fusion.return %r, %s, %g, %m : {{.*}}
fusion.func @shared_resharding(%x: !fusion.tensor<f32[2 didx, 8], mesh=[0, 1]>) -> (!fusion.tensor<f32[2, 8], mesh=[0, 1]>, !fusion.tensor<f32[2, 8], mesh=[0, 1]>, !fusion.tensor<f32[2, 8], mesh=[0, 1]>, !fusion.tensor<f32[2 stream, 8], mesh=[0, 1]>) {
  %r = fusion.relu %x : !fusion.tensor<f32[2 didx, 8], mesh=[0, 1]> -> !fusion.tensor<f32[2, 8], mesh=[0, 1]>
  %s = fusion.add %x, %x : !fusion.tensor<f32[2 didx, 8], mesh=[0, 1]>, !fusion.tensor<f32[2 didx, 8], mesh=[0, 1]> -> !fusion.tensor<f32[2, 8], mesh=[0, 1]>
  %g = fusion.set %x : !fusion.tensor<f32[2 didx, 8], mesh=[0, 1]> -> !fusion.tensor<f32[2, 8], mesh=[0, 1]>
  %m = fusion.neg %x : !fusion.tensor<f32[2 didx, 8], mesh=[0, 1]> -> !fusion.tensor<f32[2 stream, 8], mesh=[0, 1]>
  fusion.return %r, %s, %g, %m : !fusion.tensor<f32[2, 8], mesh=[0, 1]>, !fusion.tensor<f32[2, 8], mesh=[0, 1]>, !fusion.tensor<f32[2, 8], mesh=[0, 1]>, !fusion.tensor<f32[2 stream, 8], mesh=[0, 1]>
}

// -----

// K sharded in a only: b takes a's K split (a scatter of the replicated b within the
// mesh), then the rFactor applies.
// CHECK-LABEL: fusion.func @k_sharded_in_a_only
// CHECK-NEXT:    %0 = fusion.set %b : !fusion.tensor<f32[8, 16], mesh=[0, 1]> -> !fusion.tensor<f32[8(2 didx, 4), 16], mesh=[0, 1]>
// CHECK:         %4 = fusion.matmul %2, %3 : !fusion.tensor<f32[2 didx, 4, 4], mesh=[0, 1]>, !fusion.tensor<f32[2 didx, 4, 16], mesh=[0, 1]> -> !fusion.tensor<f32[2 didx, 4, 16, r4], mesh=[0, 1]>
// CHECK-NEXT:    %c = fusion.reduce sum %4 dims [0] : {{.*}} -> !fusion.tensor<f32[r2, 4, 16], mesh=[0, 1]>
fusion.func @k_sharded_in_a_only(%a: !fusion.tensor<f32[4, 8(2 didx, 4)], mesh=[0, 1]>, %b: !fusion.tensor<f32[8, 16], mesh=[0, 1]>) -> !fusion.tensor<f32[4, 16, r8], mesh=[0, 1]> {
  %c = fusion.matmul %a, %b : !fusion.tensor<f32[4, 8(2 didx, 4)], mesh=[0, 1]>, !fusion.tensor<f32[8, 16], mesh=[0, 1]> -> !fusion.tensor<f32[4, 16, r8], mesh=[0, 1]>
  fusion.return %c : !fusion.tensor<f32[4, 16, r8], mesh=[0, 1]>
}

// -----

// b sharded on N by the type a shards K on: that type moves from N to K (an all-to-all).
// CHECK-LABEL: fusion.func @n_sharded_b
// CHECK-NEXT:    %0 = fusion.set %b : !fusion.tensor<f32[8, 16(2 didx, 8)], mesh=[0, 1]> -> !fusion.tensor<f32[8(2 didx, 4), 16], mesh=[0, 1]>
fusion.func @n_sharded_b(%a: !fusion.tensor<f32[4, 8(2 didx, 4)], mesh=[0, 1]>, %b: !fusion.tensor<f32[8, 16(2 didx, 8)], mesh=[0, 1]>) -> !fusion.tensor<f32[4, 16, r8], mesh=[0, 1]> {
  %c = fusion.matmul %a, %b : !fusion.tensor<f32[4, 8(2 didx, 4)], mesh=[0, 1]>, !fusion.tensor<f32[8, 16(2 didx, 8)], mesh=[0, 1]> -> !fusion.tensor<f32[4, 16, r8], mesh=[0, 1]>
  fusion.return %c : !fusion.tensor<f32[4, 16, r8], mesh=[0, 1]>
}

// -----

// A linear whose weight alone is K-sharded: the input takes the split.
// CHECK-LABEL: fusion.func @linear_k_sharded_weight
// CHECK-NEXT:    %0 = fusion.set %x : !fusion.tensor<f32[3, 8], mesh=[0, 1]> -> !fusion.tensor<f32[3, 8(2 didx, 4)], mesh=[0, 1]>
fusion.func @linear_k_sharded_weight(%x: !fusion.tensor<f32[3, 8], mesh=[0, 1]>, %w: !fusion.tensor<f32[6, 8(2 didx, 4)], mesh=[0, 1]>) -> !fusion.tensor<f32[3, 6, r8], mesh=[0, 1]> {
  %y = fusion.linear %x, %w : !fusion.tensor<f32[3, 8], mesh=[0, 1]>, !fusion.tensor<f32[6, 8(2 didx, 4)], mesh=[0, 1]> -> !fusion.tensor<f32[3, 6, r8], mesh=[0, 1]>
  fusion.return %y : !fusion.tensor<f32[3, 6, r8], mesh=[0, 1]>
}

// -----

// K on DIDx in a and on DIDy in b: b gives up DIDy (a gather along DIDy, then a scatter
// along DIDx: one set per type).
// CHECK-LABEL: fusion.func @k_didx_against_k_didy
// CHECK-NEXT:    %0 = fusion.set %b : !fusion.tensor<f32[8(2 didy, 4), 16], mesh=[[0, 1], [2, 3]]> -> !fusion.tensor<f32[8, 16], mesh=[[0, 1], [2, 3]]>
// CHECK-NEXT:    %1 = fusion.set %0 : !fusion.tensor<f32[8, 16], mesh=[[0, 1], [2, 3]]> -> !fusion.tensor<f32[8(2 didx, 4), 16], mesh=[[0, 1], [2, 3]]>
fusion.func @k_didx_against_k_didy(%a: !fusion.tensor<f32[4, 8(2 didx, 4)], mesh=[[0, 1], [2, 3]]>, %b: !fusion.tensor<f32[8(2 didy, 4), 16], mesh=[[0, 1], [2, 3]]>) -> !fusion.tensor<f32[4, 16, r8], mesh=[[0, 1], [2, 3]]> {
  %c = fusion.matmul %a, %b : !fusion.tensor<f32[4, 8(2 didx, 4)], mesh=[[0, 1], [2, 3]]>, !fusion.tensor<f32[8(2 didy, 4), 16], mesh=[[0, 1], [2, 3]]> -> !fusion.tensor<f32[4, 16, r8], mesh=[[0, 1], [2, 3]]>
  fusion.return %c : !fusion.tensor<f32[4, 16, r8], mesh=[[0, 1], [2, 3]]>
}

// -----

// A broadcast K (one element, one device) takes the split too.
// CHECK-LABEL: fusion.func @broadcast_k
// CHECK-NEXT:    %0 = fusion.set %b : !fusion.tensor<f32[b1, 6], mesh=[0]> -> !fusion.tensor<f32[b1 didx, 6], mesh=[0]>
fusion.func @broadcast_k(%a: !fusion.tensor<f32[4, b1(1 didx, 1)], mesh=[0]>, %b: !fusion.tensor<f32[b1, 6], mesh=[0]>) -> !fusion.tensor<f32[4, 6, r1], mesh=[0]> {
  %c = fusion.matmul %a, %b : !fusion.tensor<f32[4, b1(1 didx, 1)], mesh=[0]>, !fusion.tensor<f32[b1, 6], mesh=[0]> -> !fusion.tensor<f32[4, 6, r1], mesh=[0]>
  fusion.return %c : !fusion.tensor<f32[4, 6, r1], mesh=[0]>
}

// -----

// K device-parallel in the result only: each device holds all of K and contracts it
// whole; the result's K loses its device type, and nothing is reduced across devices.
// CHECK-LABEL: fusion.func @k_sharded_in_the_result_only
// CHECK-NEXT:    %c = fusion.matmul %a, %b : {{.*}} -> !fusion.tensor<f32[4, 16, r8], mesh=[0, 1]>
// CHECK-NEXT:    fusion.return %c
fusion.func @k_sharded_in_the_result_only(%a: !fusion.tensor<f32[4, 8], mesh=[0, 1]>, %b: !fusion.tensor<f32[8, 16], mesh=[0, 1]>) -> !fusion.tensor<f32[4, 16, r8(2 didx, 4)], mesh=[0, 1]> {
  %c = fusion.matmul %a, %b : !fusion.tensor<f32[4, 8], mesh=[0, 1]>, !fusion.tensor<f32[8, 16], mesh=[0, 1]> -> !fusion.tensor<f32[4, 16, r8(2 didx, 4)], mesh=[0, 1]>
  fusion.return %c : !fusion.tensor<f32[4, 16, r8(2 didx, 4)], mesh=[0, 1]>
}

// -----

// The same for a reduce of a replicated input.
// CHECK-LABEL: fusion.func @reduced_axis_sharded_in_the_result_only
// CHECK-NEXT:    %c = fusion.reduce sum %x dims [1] : {{.*}} -> !fusion.tensor<f32[8, r4], mesh=[0, 1]>
// CHECK-NEXT:    fusion.return %c
fusion.func @reduced_axis_sharded_in_the_result_only(%x: !fusion.tensor<f32[8, 4], mesh=[0, 1]>) -> !fusion.tensor<f32[8, r4(2 didx, 2)], mesh=[0, 1]> {
  %c = fusion.reduce sum %x dims [1] : !fusion.tensor<f32[8, 4], mesh=[0, 1]> -> !fusion.tensor<f32[8, r4(2 didx, 2)], mesh=[0, 1]>
  fusion.return %c : !fusion.tensor<f32[8, r4(2 didx, 2)], mesh=[0, 1]>
}
