// RUN: hostir-opt %s --split-input-file --verify-diagnostics -p convert-op-to-communication | filecheck %s

// The gathered axis is not the outermost allocated axis with a local extent above 1.
// CHECK: convert_op_to_communication_errors.mlir:[[# @LINE + 2]]:3: error: 'fusion.set' op Resharding on an inner axis is not lowerable: axis 1 of the result must be the outermost allocated axis with a local extent above 1
hir.program @inner_axis(%a: !fusion.tensor<f32[4, 2 didx], mesh=[0, 1]>) -> !fusion.tensor<f32[4, 2], mesh=[0, 1]> {
  %b = fusion.set %a : !fusion.tensor<f32[4, 2 didx], mesh=[0, 1]> -> !fusion.tensor<f32[4, 2], mesh=[0, 1]>
  hir.return %b : !fusion.tensor<f32[4, 2], mesh=[0, 1]>
}

// -----

// Outermost logically but not in the allocation order of the result.
// CHECK: convert_op_to_communication_errors.mlir:[[# @LINE + 2]]:3: error: 'fusion.set' op Resharding on an inner axis is not lowerable: axis 0 of the result
hir.program @inner_axis_allocation(%a: !fusion.tensor<f32[2 didx, 8], mesh=[0, 1]>) -> !fusion.tensor<f32[2, 8], mesh=[0, 1], alloc=[1, 0]> {
  %b = fusion.set %a : !fusion.tensor<f32[2 didx, 8], mesh=[0, 1]> -> !fusion.tensor<f32[2, 8], mesh=[0, 1], alloc=[1, 0]>
  hir.return %b : !fusion.tensor<f32[2, 8], mesh=[0, 1], alloc=[1, 0]>
}

// -----

// Scatter of an inner axis.
// CHECK: convert_op_to_communication_errors.mlir:[[# @LINE + 2]]:3: error: 'fusion.set' op Resharding on an inner axis is not lowerable: axis 1
hir.program @inner_axis_scatter(%a: !fusion.tensor<f32[8, 4], mesh=[0]>) -> !fusion.tensor<f32[8, 4(2 didx, 2)], mesh=[0, 1]> {
  %b = fusion.set %a : !fusion.tensor<f32[8, 4], mesh=[0]> -> !fusion.tensor<f32[8, 4(2 didx, 2)], mesh=[0, 1]>
  hir.return %b : !fusion.tensor<f32[8, 4(2 didx, 2)], mesh=[0, 1]>
}

// -----

// ReduceScatter onto an inner axis.
// CHECK: convert_op_to_communication_errors.mlir:[[# @LINE + 2]]:3: error: 'fusion.reduce' op Resharding on an inner axis is not lowerable: axis 2
hir.program @inner_axis_reduce_scatter(%a: !fusion.tensor<f32[2 didx, 4, 8], mesh=[0, 1]>) -> !fusion.tensor<f32[r2, 4, 8(2 didx, 4)], mesh=[0, 1]> {
  %b = fusion.reduce sum %a dims [0] : !fusion.tensor<f32[2 didx, 4, 8], mesh=[0, 1]> -> !fusion.tensor<f32[r2, 4, 8(2 didx, 4)], mesh=[0, 1]>
  hir.return %b : !fusion.tensor<f32[r2, 4, 8(2 didx, 4)], mesh=[0, 1]>
}

// -----

// Other axes allocated in different orders on the two sides.
// CHECK: convert_op_to_communication_errors.mlir:[[# @LINE + 2]]:3: error: 'fusion.set' op input and result buffers allocate their axes in different orders, which no communication can convert
hir.program @allocation_orders(%a: !fusion.tensor<f32[2, 4, 8], mesh=[0]>) -> !fusion.tensor<f32[2, 4, 8], mesh=[1], alloc=[0, 2, 1]> {
  %b = fusion.set %a : !fusion.tensor<f32[2, 4, 8], mesh=[0]> -> !fusion.tensor<f32[2, 4, 8], mesh=[1], alloc=[0, 2, 1]>
  hir.return %b : !fusion.tensor<f32[2, 4, 8], mesh=[1], alloc=[0, 2, 1]>
}

// -----

// SendRecv pairs devices one to one.
// CHECK: convert_op_to_communication_errors.mlir:[[# @LINE + 2]]:3: error: 'fusion.set' op the receiver and sender meshes have different sizes ([0, 1, 2, 3] and [0, 1]); send_recv pairs them device by device
hir.program @mesh_sizes(%a: !fusion.tensor<f32[4(2 didx, 2), 8], mesh=[0, 1]>) -> !fusion.tensor<f32[4 didx, 8], mesh=[0, 1, 2, 3]> {
  %b = fusion.set %a : !fusion.tensor<f32[4(2 didx, 2), 8], mesh=[0, 1]> -> !fusion.tensor<f32[4 didx, 8], mesh=[0, 1, 2, 3]>
  hir.return %b : !fusion.tensor<f32[4 didx, 8], mesh=[0, 1, 2, 3]>
}

// -----

// Scatter to a 2-D mesh.
// CHECK: convert_op_to_communication_errors.mlir:[[# @LINE + 2]]:3: error: 'fusion.set' op Scatter only supported on a 1D mesh, got mesh [[0, 1], [2, 3]]
hir.program @scatter_2d(%a: !fusion.tensor<f32[2, 8], mesh=[0]>) -> !fusion.tensor<f32[2 didx, 8], mesh=[[0, 1], [2, 3]]> {
  %b = fusion.set %a : !fusion.tensor<f32[2, 8], mesh=[0]> -> !fusion.tensor<f32[2 didx, 8], mesh=[[0, 1], [2, 3]]>
  hir.return %b : !fusion.tensor<f32[2 didx, 8], mesh=[[0, 1], [2, 3]]>
}

// -----

// Scatter: no sender device is also a receiver.
// CHECK: convert_op_to_communication_errors.mlir:[[# @LINE + 2]]:3: error: 'fusion.set' op No common device found between the sender mesh [0] and the receiver mesh [1, 2]: scatter needs its root in both
hir.program @no_common_device(%a: !fusion.tensor<f32[2, 8], mesh=[0]>) -> !fusion.tensor<f32[2 didx, 8], mesh=[1, 2]> {
  %b = fusion.set %a : !fusion.tensor<f32[2, 8], mesh=[0]> -> !fusion.tensor<f32[2 didx, 8], mesh=[1, 2]>
  hir.return %b : !fusion.tensor<f32[2 didx, 8], mesh=[1, 2]>
}

// -----

// Gather from a 2-D mesh.
// CHECK: convert_op_to_communication_errors.mlir:[[# @LINE + 2]]:3: error: 'fusion.set' op Gather only supported on a 1D mesh, got mesh [[0, 1], [2, 3]]
hir.program @gather_2d(%a: !fusion.tensor<f32[2 didx, 8], mesh=[[0, 1], [2, 3]]>) -> !fusion.tensor<f32[2, 8], mesh=[4]> {
  %b = fusion.set %a : !fusion.tensor<f32[2 didx, 8], mesh=[[0, 1], [2, 3]]> -> !fusion.tensor<f32[2, 8], mesh=[4]>
  hir.return %b : !fusion.tensor<f32[2, 8], mesh=[4]>
}

// -----

// Reduce from a 2-D mesh to another mesh.
// CHECK: convert_op_to_communication_errors.mlir:[[# @LINE + 2]]:3: error: 'fusion.reduce' op Reduce only supported a 1D mesh, got mesh [[0, 1], [2, 3]]
hir.program @reduce_2d(%a: !fusion.tensor<f32[2 didx, 8], mesh=[[0, 1], [2, 3]]>) -> !fusion.tensor<f32[r2, 8], mesh=[4]> {
  %b = fusion.reduce sum %a dims [0] : !fusion.tensor<f32[2 didx, 8], mesh=[[0, 1], [2, 3]]> -> !fusion.tensor<f32[r2, 8], mesh=[4]>
  hir.return %b : !fusion.tensor<f32[r2, 8], mesh=[4]>
}

// -----

// A resharding reduction of an input that is not sharded.
// CHECK: convert_op_to_communication_errors.mlir:[[# @LINE + 2]]:3: error: 'fusion.reduce' op the comm input must be sharded in case of reduce. Insert a `set` before the reduction to reshard
hir.program @reduce_unsharded(%a: !fusion.tensor<f32[4, 8], mesh=[0, 1]>) -> !fusion.tensor<f32[r4, 8], mesh=[0]> {
  %b = fusion.reduce sum %a dims [0] : !fusion.tensor<f32[4, 8], mesh=[0, 1]> -> !fusion.tensor<f32[r4, 8], mesh=[0]>
  hir.return %b : !fusion.tensor<f32[r4, 8], mesh=[0]>
}

// -----

// Reduces a local axis together with the device axis.
// CHECK: convert_op_to_communication_errors.mlir:[[# @LINE + 2]]:3: error: 'fusion.reduce' op reduces local data as well as across devices, which is not one communication; run decompose-reshardings first
hir.program @reduce_local_too(%a: !fusion.tensor<f32[2 didx, 8], mesh=[0, 1]>) -> !fusion.tensor<f32[r2, r8], mesh=[0, 1]> {
  %b = fusion.reduce sum %a dims [0, 1] : !fusion.tensor<f32[2 didx, 8], mesh=[0, 1]> -> !fusion.tensor<f32[r2, r8], mesh=[0, 1]>
  hir.return %b : !fusion.tensor<f32[r2, r8], mesh=[0, 1]>
}

// -----

// Reduces a split device-parallel axis (a local part too).
// CHECK: convert_op_to_communication_errors.mlir:[[# @LINE + 2]]:3: error: 'fusion.reduce' op reduces a split device-parallel axis (a local part as well), which is not one communication; run decompose-reshardings first
hir.program @reduce_split_axis(%a: !fusion.tensor<f32[8(2 didx, 4), 4], mesh=[0, 1]>) -> !fusion.tensor<f32[r8, 4], mesh=[0, 1]> {
  %b = fusion.reduce sum %a dims [0] : !fusion.tensor<f32[8(2 didx, 4), 4], mesh=[0, 1]> -> !fusion.tensor<f32[r8, 4], mesh=[0, 1]>
  hir.return %b : !fusion.tensor<f32[r8, 4], mesh=[0, 1]>
}

// -----

// ReduceScatter between different meshes.
// CHECK: convert_op_to_communication_errors.mlir:[[# @LINE + 2]]:3: error: 'fusion.reduce' op ReduceScatter operation must have the same sender and receiver device mesh, got [0, 1] and [2, 3]
hir.program @reduce_scatter_meshes(%a: !fusion.tensor<f32[2 didx, 8], mesh=[0, 1]>) -> !fusion.tensor<f32[r2, 8(2 didx, 4)], mesh=[2, 3]> {
  %b = fusion.reduce sum %a dims [0] : !fusion.tensor<f32[2 didx, 8], mesh=[0, 1]> -> !fusion.tensor<f32[r2, 8(2 didx, 4)], mesh=[2, 3]>
  hir.return %b : !fusion.tensor<f32[r2, 8(2 didx, 4)], mesh=[2, 3]>
}

// -----

// An all-to-all between different meshes.
// CHECK: convert_op_to_communication_errors.mlir:[[# @LINE + 2]]:3: error: 'fusion.set' op reshards from axis 0 to axis 1 (an all-to-all) between different meshes ([0, 1] and [2, 3]), which is not lowerable
hir.program @all_to_all_meshes(%a: !fusion.tensor<f32[2 didx, 8], mesh=[0, 1]>) -> !fusion.tensor<f32[2, 8(2 didx, 4)], mesh=[2, 3]> {
  %b = fusion.set %a : !fusion.tensor<f32[2 didx, 8], mesh=[0, 1]> -> !fusion.tensor<f32[2, 8(2 didx, 4)], mesh=[2, 3]>
  hir.return %b : !fusion.tensor<f32[2, 8(2 didx, 4)], mesh=[2, 3]>
}

// -----

// An all-to-all whose gathered and scattered axes both keep 2 elements per device: no
// order of the logical axes makes one chunk of the input a chunk of the result.
// CHECK: convert_op_to_communication_errors.mlir:[[# @LINE + 2]]:3: error: 'fusion.set' op an all-to-all from axis 0 to axis 1 that keeps both above one element per device needs its scattered axis split first (reorder-sharded-axis does it)
hir.program @all_to_all_needs_split(%a: !fusion.tensor<f32[4(2 didx, 2), 4], mesh=[0, 1], alloc=[1, 0]>) -> !fusion.tensor<f32[4, 4(2 didx, 2)], mesh=[0, 1]> {
  %b = fusion.set %a : !fusion.tensor<f32[4(2 didx, 2), 4], mesh=[0, 1], alloc=[1, 0]> -> !fusion.tensor<f32[4, 4(2 didx, 2)], mesh=[0, 1]>
  hir.return %b : !fusion.tensor<f32[4, 4(2 didx, 2)], mesh=[0, 1]>
}

// -----

// The scattered axis of an all-to-all is not outermost in the input.
// CHECK: convert_op_to_communication_errors.mlir:[[# @LINE + 2]]:3: error: 'fusion.set' op Resharding on an inner axis is not lowerable: axis 1 of the result must be the outermost allocated axis with a local extent above 1 (reorder-sharded-axis makes it so)
hir.program @all_to_all_inner(%a: !fusion.tensor<f32[4(2 didx, 2), 4], mesh=[0, 1]>) -> !fusion.tensor<f32[4, 4(2 didx, 2)], mesh=[0, 1]> {
  %b = fusion.set %a : !fusion.tensor<f32[4(2 didx, 2), 4], mesh=[0, 1]> -> !fusion.tensor<f32[4, 4(2 didx, 2)], mesh=[0, 1]>
  hir.return %b : !fusion.tensor<f32[4, 4(2 didx, 2)], mesh=[0, 1]>
}

// -----

// DIDx and DIDy change at once: two communications.
// CHECK: convert_op_to_communication_errors.mlir:[[# @LINE + 2]]:3: error: 'fusion.set' op changes more than one parallel type (didx, didy), which is more than one communication; run decompose-reshardings first
hir.program @didx_and_didy(%a: !fusion.tensor<f32[2 didy, 2 didx, 8], mesh=[[0, 1], [2, 3]]>) -> !fusion.tensor<f32[2, 2, 8], mesh=[[0, 1], [2, 3]]> {
  %b = fusion.set %a : !fusion.tensor<f32[2 didy, 2 didx, 8], mesh=[[0, 1], [2, 3]]> -> !fusion.tensor<f32[2, 2, 8], mesh=[[0, 1], [2, 3]]>
  hir.return %b : !fusion.tensor<f32[2, 2, 8], mesh=[[0, 1], [2, 3]]>
}

// -----

// A DIDy change between meshes (a gather from a 2-D mesh).
// CHECK: convert_op_to_communication_errors.mlir:[[# @LINE + 2]]:3: error: 'fusion.set' op Gather only supported on a 1D mesh, got mesh [[0, 1], [2, 3]]
hir.program @didy_meshes(%a: !fusion.tensor<f32[2 didy, 8], mesh=[[0, 1], [2, 3]]>) -> !fusion.tensor<f32[2, 8], mesh=[4]> {
  %b = fusion.set %a : !fusion.tensor<f32[2 didy, 8], mesh=[[0, 1], [2, 3]]> -> !fusion.tensor<f32[2, 8], mesh=[4]>
  hir.return %b : !fusion.tensor<f32[2, 8], mesh=[4]>
}

// -----

// DIDy on the inner piece of a split.
// CHECK: convert_op_to_communication_errors.mlir:[[# @LINE + 2]]:3: error: 'fusion.set' op DIDy on an inner split (axis 0 of !fusion.tensor<f32[8(4, 2 didy)], mesh=[[0, 1], [2, 3]]>) is not lowerable; split the axis outer
hir.program @inner_split_didy(%a: !fusion.tensor<f32[8(4, 2 didy)], mesh=[[0, 1], [2, 3]]>) -> !fusion.tensor<f32[8], mesh=[[0, 1], [2, 3]]> {
  %b = fusion.set %a : !fusion.tensor<f32[8(4, 2 didy)], mesh=[[0, 1], [2, 3]]> -> !fusion.tensor<f32[8], mesh=[[0, 1], [2, 3]]>
  hir.return %b : !fusion.tensor<f32[8], mesh=[[0, 1], [2, 3]]>
}

// -----

// DIDy behind a DIDx piece that the result does not keep (the whole axis gathered: two
// types at once; decompose-reshardings gathers one type at a time).
// CHECK: convert_op_to_communication_errors.mlir:[[# @LINE + 2]]:3: error: 'fusion.set' op DIDy on an inner split (axis 0 of !fusion.tensor<f32[8(2 didx, 2 didy, 2)], mesh=[[0, 1], [2, 3]]>) is not lowerable; split the axis outer
hir.program @inner_split_didy_unshared(%a: !fusion.tensor<f32[8(2 didx, 2 didy, 2)], mesh=[[0, 1], [2, 3]]>) -> !fusion.tensor<f32[8], mesh=[[0, 1], [2, 3]]> {
  %b = fusion.set %a : !fusion.tensor<f32[8(2 didx, 2 didy, 2)], mesh=[[0, 1], [2, 3]]> -> !fusion.tensor<f32[8], mesh=[[0, 1], [2, 3]]>
  hir.return %b : !fusion.tensor<f32[8], mesh=[[0, 1], [2, 3]]>
}

// -----

// DIDx on the inner piece of a split.
// CHECK: convert_op_to_communication_errors.mlir:[[# @LINE + 2]]:3: error: 'fusion.set' op DIDx on an inner split (axis 0 of !fusion.tensor<f32[8(4, 2 didx)], mesh=[0, 1]>) is not lowerable; split the axis outer
hir.program @inner_split(%a: !fusion.tensor<f32[8(4, 2 didx)], mesh=[0, 1]>) -> !fusion.tensor<f32[8], mesh=[0, 1]> {
  %b = fusion.set %a : !fusion.tensor<f32[8(4, 2 didx)], mesh=[0, 1]> -> !fusion.tensor<f32[8], mesh=[0, 1]>
  hir.return %b : !fusion.tensor<f32[8], mesh=[0, 1]>
}

// -----

// One side has no mesh.
// CHECK: convert_op_to_communication_errors.mlir:[[# @LINE + 2]]:3: error: 'fusion.set' op reshards between a tensor with a device mesh and one without; run propagate-shardings first
hir.program @no_mesh(%a: !fusion.tensor<f32[2, 8]>) -> !fusion.tensor<f32[2 didx, 8], mesh=[0, 1]> {
  %b = fusion.set %a : !fusion.tensor<f32[2, 8]> -> !fusion.tensor<f32[2 didx, 8], mesh=[0, 1]>
  hir.return %b : !fusion.tensor<f32[2 didx, 8], mesh=[0, 1]>
}

// -----

// An op that computes and reshards at once (decompose-reshardings splits those).
// CHECK: convert_op_to_communication_errors.mlir:[[# @LINE + 2]]:3: error: 'fusion.relu' op computes as well as moves data between devices, which is not one communication; run decompose-reshardings first
hir.program @computes(%a: !fusion.tensor<f32[2 didx, 8], mesh=[0, 1]>) -> !fusion.tensor<f32[2, 8], mesh=[0, 1]> {
  %b = fusion.relu %a : !fusion.tensor<f32[2 didx, 8], mesh=[0, 1]> -> !fusion.tensor<f32[2, 8], mesh=[0, 1]>
  hir.return %b : !fusion.tensor<f32[2, 8], mesh=[0, 1]>
}

// -----

// A matmul contracting a sharded K: every device would return its partial sum.
// CHECK: convert_op_to_communication_errors.mlir:[[# @LINE + 2]]:3: error: 'fusion.matmul' op computes as well as moves data between devices
hir.program @partial_matmul(%a: !fusion.tensor<f32[4, 8(2 didx, 4)], mesh=[0, 1]>, %b: !fusion.tensor<f32[8(2 didx, 4), 6], mesh=[0, 1]>) -> !fusion.tensor<f32[4, 6, r8(2 didx, 4)], mesh=[0, 1]> {
  %c = fusion.matmul %a, %b : !fusion.tensor<f32[4, 8(2 didx, 4)], mesh=[0, 1]>, !fusion.tensor<f32[8(2 didx, 4), 6], mesh=[0, 1]> -> !fusion.tensor<f32[4, 6, r8(2 didx, 4)], mesh=[0, 1]>
  hir.return %c : !fusion.tensor<f32[4, 6, r8(2 didx, 4)], mesh=[0, 1]>
}

// -----

// Nothing to convert yet: the pass runs on host programs.
// CHECK: error: 'builtin.module' op holds no hir.program to convert; run lower-to-host first
fusion.func @not_lowered(%a: !fusion.tensor<f32[2 didx, 8], mesh=[0, 1]>) -> !fusion.tensor<f32[2, 8], mesh=[0, 1]> {
  %b = fusion.set %a : !fusion.tensor<f32[2 didx, 8], mesh=[0, 1]> -> !fusion.tensor<f32[2, 8], mesh=[0, 1]>
  fusion.return %b : !fusion.tensor<f32[2, 8], mesh=[0, 1]>
}

// -----

// A stream loop over an inner axis: each chunk is strided in its buffer.
hir.program @chunk_not_contiguous(%x: !fusion.tensor<f32[8(4 didx, 2), 8], mesh=[0, 1, 2, 3]>) -> !fusion.tensor<f32[8, 8 stream], mesh=[0, 1, 2, 3]> {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c8 = arith.constant 8 : index
  %y = hir.allocate : !fusion.tensor<f32[8, 8 stream], mesh=[0, 1, 2, 3]>
  scf.for %i = %c0 to %c8 step %c1 {
    %x_i = hir.alias_select %x[%i] axis 1 : !fusion.tensor<f32[8(4 didx, 2), 8], mesh=[0, 1, 2, 3]> -> !fusion.tensor<f32[8(4 didx, 2)], mesh=[0, 1, 2, 3]>
    %y_i = hir.alias_select %y[%i] axis 1 : !fusion.tensor<f32[8, 8 stream], mesh=[0, 1, 2, 3]> -> !fusion.tensor<f32[8], mesh=[0, 1, 2, 3]>
    // CHECK: convert_op_to_communication_errors.mlir:[[# @LINE + 1]]:5: error: 'fusion.set' op communicates chunks of a stream loop over axis 1 that are not contiguous in their buffer: that axis must be allocated outermost (reorder-sharded-axis makes it so)
    %0 = fusion.set %x_i into %y_i : !fusion.tensor<f32[8(4 didx, 2)], mesh=[0, 1, 2, 3]> -> !fusion.tensor<f32[8], mesh=[0, 1, 2, 3]>
  }
  hir.return %y : !fusion.tensor<f32[8, 8 stream], mesh=[0, 1, 2, 3]>
}
