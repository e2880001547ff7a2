// RUN: hostir-opt %s --split-input-file -p propagate-shardings | filecheck %s

// StreamTest.ForwardPropagation: the weight's Stream split reaches the matmul's N axis.
// The unannotated fusion input %x stays as written.
// CHECK-LABEL: fusion.func @forward_stream(%x: !fusion.tensor<f32[4, 8]>, %w: !fusion.tensor<f32[8, 16(2 stream, 8)]>) -> !fusion.tensor<f32[4, 16(2 stream, 8), r8]> {
// CHECK-NEXT:    %c = fusion.matmul %x, %w : !fusion.tensor<f32[4, 8]>, !fusion.tensor<f32[8, 16(2 stream, 8)]> -> !fusion.tensor<f32[4, 16(2 stream, 8), r8]>
// CHECK-NEXT:    fusion.return %c : !fusion.tensor<f32[4, 16(2 stream, 8), r8]>
fusion.func @forward_stream(%x: !fusion.tensor<f32[4, 8]>, %w: !fusion.tensor<f32[8, 16(2 stream, 8)]>) -> !fusion.tensor<f32[4, 16, r8]> {
  %c = fusion.matmul %x, %w : !fusion.tensor<f32[4, 8]>, !fusion.tensor<f32[8, 16(2 stream, 8)]> -> !fusion.tensor<f32[4, 16, r8]>
  fusion.return %c : !fusion.tensor<f32[4, 16, r8]>
}

// -----

// StreamTest.BackwardPropagation: the output's Stream split flows back to the
// intermediate; the fusion input never receives Stream (unlike nvFuser).
// CHECK-LABEL: fusion.func @backward_stream(%x: !fusion.tensor<f32[8, 4]>)
// CHECK-NEXT:    %a = fusion.relu %x : !fusion.tensor<f32[8, 4]> -> !fusion.tensor<f32[8(2 stream, 4), 4]>
// CHECK-NEXT:    %b = fusion.add %a, %a : !fusion.tensor<f32[8(2 stream, 4), 4]>, !fusion.tensor<f32[8(2 stream, 4), 4]> -> !fusion.tensor<f32[8(2 stream, 4), 4]>
fusion.func @backward_stream(%x: !fusion.tensor<f32[8, 4]>) -> !fusion.tensor<f32[8(2 stream, 4), 4]> {
  %a = fusion.relu %x : !fusion.tensor<f32[8, 4]> -> !fusion.tensor<f32[8, 4]>
  %b = fusion.add %a, %a : !fusion.tensor<f32[8, 4]>, !fusion.tensor<f32[8, 4]> -> !fusion.tensor<f32[8(2 stream, 4), 4]>
  fusion.return %b : !fusion.tensor<f32[8(2 stream, 4), 4]>
}

// -----

// DIDx forward through elementwise ops and a reduction: the mesh comes along, the
// reduced axis keeps the split (decompose-reshardings rFactors it), the signature follows.
// CHECK-LABEL: fusion.func @forward_didx(%x: !fusion.tensor<f32[4, 8(2 didx, 4)], mesh=[0, 1]>) -> !fusion.tensor<f32[4, r8(2 didx, 4)], mesh=[0, 1]> {
// CHECK-NEXT:    %e = fusion.exp %x : !fusion.tensor<f32[4, 8(2 didx, 4)], mesh=[0, 1]> -> !fusion.tensor<f32[4, 8(2 didx, 4)], mesh=[0, 1]>
// CHECK-NEXT:    %s = fusion.reduce sum %e dims [1] : !fusion.tensor<f32[4, 8(2 didx, 4)], mesh=[0, 1]> -> !fusion.tensor<f32[4, r8(2 didx, 4)], mesh=[0, 1]>
fusion.func @forward_didx(%x: !fusion.tensor<f32[4, 8(2 didx, 4)], mesh=[0, 1]>) -> !fusion.tensor<f32[4, r8]> {
  %e = fusion.exp %x : !fusion.tensor<f32[4, 8(2 didx, 4)], mesh=[0, 1]> -> !fusion.tensor<f32[4, 8]>
  %s = fusion.reduce sum %e dims [1] : !fusion.tensor<f32[4, 8]> -> !fusion.tensor<f32[4, r8]>
  fusion.return %s : !fusion.tensor<f32[4, r8]>
}

// -----

// A K-sharded weight: the matmul's reduction axis gets the split forward; backward,
// the intermediate feeding A gets K sharded, the fusion input only the mesh.
// CHECK-LABEL: fusion.func @k_sharded_matmul(%x: !fusion.tensor<f32[4, 8], mesh=[0, 1]>, %w: !fusion.tensor<f32[8(2 didx, 4), 16], mesh=[0, 1]>)
// CHECK-SAME:    -> !fusion.tensor<f32[4, 16, r8(2 didx, 4)], mesh=[0, 1]>
// CHECK-NEXT:    %a = fusion.relu %x : !fusion.tensor<f32[4, 8], mesh=[0, 1]> -> !fusion.tensor<f32[4, 8(2 didx, 4)], mesh=[0, 1]>
// CHECK-NEXT:    %c = fusion.matmul %a, %w : !fusion.tensor<f32[4, 8(2 didx, 4)], mesh=[0, 1]>, !fusion.tensor<f32[8(2 didx, 4), 16], mesh=[0, 1]> -> !fusion.tensor<f32[4, 16, r8(2 didx, 4)], mesh=[0, 1]>
fusion.func @k_sharded_matmul(%x: !fusion.tensor<f32[4, 8]>, %w: !fusion.tensor<f32[8(2 didx, 4), 16], mesh=[0, 1]>) -> !fusion.tensor<f32[4, 16, r8]> {
  %a = fusion.relu %x : !fusion.tensor<f32[4, 8]> -> !fusion.tensor<f32[4, 8]>
  %c = fusion.matmul %a, %w : !fusion.tensor<f32[4, 8]>, !fusion.tensor<f32[8(2 didx, 4), 16], mesh=[0, 1]> -> !fusion.tensor<f32[4, 16, r8]>
  fusion.return %c : !fusion.tensor<f32[4, 16, r8]>
}

// -----

// linear prefers the weight: its N sharding wins over the input's M sharding (the
// result can hold only one DIDx axis).
// CHECK-LABEL: fusion.func @linear_prefers_weight
// CHECK:         fusion.linear %x, %w : {{.*}} -> !fusion.tensor<f32[4, 16(2 didx, 8), r8], mesh=[0, 1]>
fusion.func @linear_prefers_weight(%x: !fusion.tensor<f32[4(2 didx, 2), 8], mesh=[0, 1]>, %w: !fusion.tensor<f32[16(2 didx, 8), 8], mesh=[0, 1]>) -> !fusion.tensor<f32[4, 16, r8]> {
  %y = fusion.linear %x, %w : !fusion.tensor<f32[4(2 didx, 2), 8], mesh=[0, 1]>, !fusion.tensor<f32[16(2 didx, 8), 8], mesh=[0, 1]> -> !fusion.tensor<f32[4, 16, r8]>
  fusion.return %y : !fusion.tensor<f32[4, 16, r8]>
}

// -----

// Otherwise the most parallel input is the reference.
// CHECK-LABEL: fusion.func @most_parallel_input
// CHECK:         fusion.add %a, %b : {{.*}} -> !fusion.tensor<f32[8 stream, 2 didx], mesh=[0, 1]>
fusion.func @most_parallel_input(%a: !fusion.tensor<f32[8, 2], mesh=[0, 1]>, %b: !fusion.tensor<f32[8 stream, 2 didx], mesh=[0, 1]>) -> !fusion.tensor<f32[8, 2]> {
  %c = fusion.add %a, %b : !fusion.tensor<f32[8, 2], mesh=[0, 1]>, !fusion.tensor<f32[8 stream, 2 didx], mesh=[0, 1]> -> !fusion.tensor<f32[8, 2]>
  fusion.return %c : !fusion.tensor<f32[8, 2]>
}

// -----

// Reshape: an outer split follows the outermost axis of a merge (and of a split);
// an inner merged axis cannot be an outer split of the result, so nothing follows it.
// CHECK-LABEL: fusion.func @reshape
// CHECK-NEXT:    %m = fusion.reshape %x : {{.*}} -> !fusion.tensor<f32[32(2 didx, 16)], mesh=[0, 1]>
// CHECK-NEXT:    %s = fusion.reshape %m : {{.*}} -> !fusion.tensor<f32[2 didx, 16], mesh=[0, 1]>
// CHECK-NEXT:    %i = fusion.reshape %y : {{.*}} -> !fusion.tensor<f32[32], mesh=[0, 1]>
fusion.func @reshape(%x: !fusion.tensor<f32[8(2 didx, 4), 4], mesh=[0, 1]>, %y: !fusion.tensor<f32[8, 4(2 didx, 2)], mesh=[0, 1]>) -> (!fusion.tensor<f32[2, 16]>, !fusion.tensor<f32[32]>) {
  %m = fusion.reshape %x : !fusion.tensor<f32[8(2 didx, 4), 4], mesh=[0, 1]> -> !fusion.tensor<f32[32]>
  %s = fusion.reshape %m : !fusion.tensor<f32[32]> -> !fusion.tensor<f32[2, 16]>
  %i = fusion.reshape %y : !fusion.tensor<f32[8, 4(2 didx, 2)], mesh=[0, 1]> -> !fusion.tensor<f32[32]>
  fusion.return %s, %i : !fusion.tensor<f32[2, 16]>, !fusion.tensor<f32[32]>
}

// -----

// User-annotated tensors are never changed; a DID type moves only onto a mesh with the
// same number of devices along it (%y has a 2-device mesh, the output 3 along DIDx).
// CHECK-LABEL: fusion.func @annotated_and_mesh_size
// CHECK-NEXT:    %y = fusion.relu %x : !fusion.tensor<f32[6, 4], mesh=[0, 1]> -> !fusion.tensor<f32[6, 4], mesh=[0, 1]>
// CHECK-NEXT:    %z = fusion.set %y : !fusion.tensor<f32[6, 4], mesh=[0, 1]> -> !fusion.tensor<f32[6(3 didx, 2), 4], mesh=[0, 1, 2]>
// CHECK-NEXT:    %k = fusion.neg %z : {{.*}} -> !fusion.tensor<f32[6, 4], mesh=[0, 1, 2]>
fusion.func @annotated_and_mesh_size(%x: !fusion.tensor<f32[6, 4], mesh=[0, 1]>) -> !fusion.tensor<f32[6, 4], mesh=[0, 1, 2]> {
  %y = fusion.relu %x : !fusion.tensor<f32[6, 4], mesh=[0, 1]> -> !fusion.tensor<f32[6, 4]>
  %z = fusion.set %y : !fusion.tensor<f32[6, 4]> -> !fusion.tensor<f32[6(3 didx, 2), 4], mesh=[0, 1, 2]>
  %k = fusion.neg %z : !fusion.tensor<f32[6(3 didx, 2), 4], mesh=[0, 1, 2]> -> !fusion.tensor<f32[6, 4], mesh=[0, 1, 2]>
  fusion.return %k : !fusion.tensor<f32[6, 4], mesh=[0, 1, 2]>
}

// -----

// 2-D mesh: DIDx and DIDy both follow, through a permute.
// CHECK-LABEL: fusion.func @two_d_mesh
// CHECK-NEXT:    %p = fusion.permute %x dims [1, 0] : {{.*}} -> !fusion.tensor<f32[8(2 didx, 4), 4(2 didy, 2)], mesh={{\[\[}}0, 1], [2, 3]]>
fusion.func @two_d_mesh(%x: !fusion.tensor<f32[4(2 didy, 2), 8(2 didx, 4)], mesh=[[0, 1], [2, 3]]>) -> !fusion.tensor<f32[8, 4]> {
  %p = fusion.permute %x dims [1, 0] : !fusion.tensor<f32[4(2 didy, 2), 8(2 didx, 4)], mesh=[[0, 1], [2, 3]]> -> !fusion.tensor<f32[8, 4]>
  fusion.return %p : !fusion.tensor<f32[8, 4]>
}

// -----

// Propagation stops where the mapping is not exact, leaving the target unsharded on
// that type (but on the mesh) instead of refusing: from an inner split...
// CHECK-LABEL: fusion.func @inner_split
// CHECK-NEXT:    %y = fusion.relu %x : !fusion.tensor<f32[8(2, 4 didx)], mesh=[0, 1, 2, 3]> -> !fusion.tensor<f32[8], mesh=[0, 1, 2, 3]>
fusion.func @inner_split(%x: !fusion.tensor<f32[8(2, 4 didx)], mesh=[0, 1, 2, 3]>) -> !fusion.tensor<f32[8]> {
  %y = fusion.relu %x : !fusion.tensor<f32[8(2, 4 didx)], mesh=[0, 1, 2, 3]> -> !fusion.tensor<f32[8]>
  fusion.return %y : !fusion.tensor<f32[8]>
}

// -----

// ... onto an axis the split factor does not divide (a reshape onto another extent) ...
// CHECK-LABEL: fusion.func @not_divisible
// CHECK-NEXT:    %y = fusion.reshape %x : !fusion.tensor<f32[6(2 didx, 3), 4], mesh=[0, 1]> -> !fusion.tensor<f32[3, 8], mesh=[0, 1]>
fusion.func @not_divisible(%x: !fusion.tensor<f32[6(2 didx, 3), 4], mesh=[0, 1]>) -> !fusion.tensor<f32[3, 8]> {
  %y = fusion.reshape %x : !fusion.tensor<f32[6(2 didx, 3), 4], mesh=[0, 1]> -> !fusion.tensor<f32[3, 8]>
  fusion.return %y : !fusion.tensor<f32[3, 8]>
}

// -----

// ... and backward too.
// CHECK-LABEL: fusion.func @not_divisible_backward
// CHECK-NEXT:    %y = fusion.relu %x : !fusion.tensor<f32[2, 8], mesh=[0, 1, 2, 3]> -> !fusion.tensor<f32[2, 8], mesh=[0, 1, 2, 3]>
fusion.func @not_divisible_backward(%x: !fusion.tensor<f32[2, 8], mesh=[0, 1, 2, 3]>) -> !fusion.tensor<f32[16(4 didx, 4)], mesh=[0, 1, 2, 3]> {
  %y = fusion.relu %x : !fusion.tensor<f32[2, 8], mesh=[0, 1, 2, 3]> -> !fusion.tensor<f32[2, 8]>
  %z = fusion.reshape %y : !fusion.tensor<f32[2, 8]> -> !fusion.tensor<f32[16(4 didx, 4)], mesh=[0, 1, 2, 3]>
  fusion.return %z : !fusion.tensor<f32[16(4 didx, 4)], mesh=[0, 1, 2, 3]>
}

// -----

// Sweeps repeat to a fixed point: %b's mesh comes from %a, which gets it backward from
// %c after the forward sweep has passed %b (one sweep each way left %b without a mesh).
// CHECK-LABEL: fusion.func @fixed_point
// CHECK-NEXT:    %b = fusion.relu %a : !fusion.tensor<f32[4, 8], mesh=[0, 1]> -> !fusion.tensor<f32[4, 8], mesh=[0, 1]>
// CHECK-NEXT:    %r = fusion.relu %a : !fusion.tensor<f32[4, 8], mesh=[0, 1]> -> !fusion.tensor<f32[4, 8], mesh=[0, 1]>
// CHECK-NEXT:    %c = fusion.add %r, %m : !fusion.tensor<f32[4, 8], mesh=[0, 1]>, !fusion.tensor<f32[4, 8], mesh=[0, 1]> -> !fusion.tensor<f32[4, 8], mesh=[0, 1]>
fusion.func @fixed_point(%a: !fusion.tensor<f32[4, 8]>, %m: !fusion.tensor<f32[4, 8], mesh=[0, 1]>) -> (!fusion.tensor<f32[4, 8]>, !fusion.tensor<f32[4, 8]>) {
  %b = fusion.relu %a : !fusion.tensor<f32[4, 8]> -> !fusion.tensor<f32[4, 8]>
  %r = fusion.relu %a : !fusion.tensor<f32[4, 8]> -> !fusion.tensor<f32[4, 8]>
  %c = fusion.add %r, %m : !fusion.tensor<f32[4, 8]>, !fusion.tensor<f32[4, 8], mesh=[0, 1]> -> !fusion.tensor<f32[4, 8]>
  fusion.return %b, %c : !fusion.tensor<f32[4, 8]>, !fusion.tensor<f32[4, 8]>
}

// -----

// A chain connected to no tensor with a mesh is replicated on the fusion's only mesh.
// CHECK-LABEL: fusion.func @disconnected
// CHECK-SAME:    (%a: !fusion.tensor<f32[4], mesh=[0, 1]>, %m: !fusion.tensor<f32[4], mesh=[0, 1]>)
// CHECK-NEXT:    %b = fusion.relu %a : !fusion.tensor<f32[4], mesh=[0, 1]> -> !fusion.tensor<f32[4], mesh=[0, 1]>
fusion.func @disconnected(%a: !fusion.tensor<f32[4]>, %m: !fusion.tensor<f32[4], mesh=[0, 1]>) -> !fusion.tensor<f32[4], mesh=[0, 1]> {
  %b = fusion.relu %a : !fusion.tensor<f32[4]> -> !fusion.tensor<f32[4]>
  fusion.return %m : !fusion.tensor<f32[4], mesh=[0, 1]>
}
