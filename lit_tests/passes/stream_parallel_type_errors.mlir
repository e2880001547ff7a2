// RUN: hostir-opt %s --split-input-file --verify-diagnostics -p stream-parallel-type | filecheck %s

// InputsAreNotStreamParallelized
// CHECK: stream_parallel_type_errors.mlir:[[# @LINE + 1]]:1: error: 'hir.program' op expected no stream axis in the program inputs, but input 0 has type !fusion.tensor<f32[4 stream, 8]>
hir.program @stream_input(%a: !fusion.tensor<f32[4 stream, 8]>) -> !fusion.tensor<f32[4, 8]> {
  %b = fusion.set %a : !fusion.tensor<f32[4 stream, 8]> -> !fusion.tensor<f32[4, 8]>
  hir.return %b : !fusion.tensor<f32[4, 8]>
}

// -----

// Split: the stream axis is a piece of a split axis, not a logical axis.
hir.program @split(%a: !fusion.tensor<f32[8, 4]>) -> !fusion.tensor<f32[8(2 stream, 4), 4]> {
  // CHECK: :[[# @LINE + 1]]:3: error: 'fusion.set' op cannot stream-parallelize a split axis: the stream axis must be in the logical domain, but axis 0 of the result is split
  %b = fusion.set %a : !fusion.tensor<f32[8, 4]> -> !fusion.tensor<f32[8(2 stream, 4), 4]>
  hir.return %b : !fusion.tensor<f32[8(2 stream, 4), 4]>
}

// -----

// ReductionUnsupported: the reduced axis is the stream axis.
hir.program @reduction_axis(%a: !fusion.tensor<f32[4, 8]>) -> !fusion.tensor<f32[r4 stream, 8]> {
  // CHECK: :[[# @LINE + 1]]:3: error: 'fusion.reduce' op cannot stream-parallelize a reduction axis: the stream axis 0 of the result reduces
  %b = fusion.reduce sum %a dims [0] : !fusion.tensor<f32[4, 8]> -> !fusion.tensor<f32[r4 stream, 8]>
  hir.return %b : !fusion.tensor<f32[r4 stream, 8]>
}

// -----

// Matmul_K: the contracted axis is the stream axis.
hir.program @matmul_k(%a: !fusion.tensor<f32[8, 4]>, %b: !fusion.tensor<f32[4, 2]>) -> !fusion.tensor<f32[8, 2, r4 stream]> {
  // CHECK: :[[# @LINE + 1]]:3: error: 'fusion.matmul' op cannot stream-parallelize a reduction axis: the stream axis 2 of the result reduces
  %c = fusion.matmul %a, %b : !fusion.tensor<f32[8, 4]>, !fusion.tensor<f32[4, 2]> -> !fusion.tensor<f32[8, 2, r4 stream]>
  hir.return %c : !fusion.tensor<f32[8, 2, r4 stream]>
}

// -----

// DoNotSupportPostOnStream: a kernel unit cannot be computed chunk by chunk.
fusion.func @abs_unit(%a: !fusion.tensor<f32[4, 8]>) -> !fusion.tensor<f32[4 stream, 8]> {
  %b = fusion.abs %a : !fusion.tensor<f32[4, 8]> -> !fusion.tensor<f32[4 stream, 8]>
  fusion.return %b : !fusion.tensor<f32[4 stream, 8]>
}
hir.program @post_on_stream(%a: !fusion.tensor<f32[4, 8]>) -> !fusion.tensor<f32[4 stream, 8]> {
  // CHECK: :[[# @LINE + 1]]:3: error: 'hir.post_on_stream' op stream parallel type not supported for post_on_stream @abs_unit: only a standalone host op can be stream-parallelized
  %b = hir.post_on_stream @abs_unit(%a) : (!fusion.tensor<f32[4, 8]>) -> !fusion.tensor<f32[4 stream, 8]>
  hir.return %b : !fusion.tensor<f32[4 stream, 8]>
}

// -----

// A stream-parallel op must have one result.
fusion.func @two_results(%a: !fusion.tensor<f32[4, 8]>) -> (!fusion.tensor<f32[4 stream, 8]>, !fusion.tensor<f32[4, 8]>) {
  %b = fusion.abs %a : !fusion.tensor<f32[4, 8]> -> !fusion.tensor<f32[4 stream, 8]>
  %c = fusion.neg %a : !fusion.tensor<f32[4, 8]> -> !fusion.tensor<f32[4, 8]>
  fusion.return %b, %c : !fusion.tensor<f32[4 stream, 8]>, !fusion.tensor<f32[4, 8]>
}
hir.program @several_results(%a: !fusion.tensor<f32[4, 8]>) -> !fusion.tensor<f32[4 stream, 8]> {
  // CHECK: :[[# @LINE + 1]]:3: error: 'hir.post_on_stream' op has 2 results; a stream-parallel op must have exactly one
  %b, %c = hir.post_on_stream @two_results(%a) : (!fusion.tensor<f32[4, 8]>) -> (!fusion.tensor<f32[4 stream, 8]>, !fusion.tensor<f32[4, 8]>)
  hir.return %b : !fusion.tensor<f32[4 stream, 8]>
}

// -----

// A standalone op whose axis attributes this pass does not renumber.
hir.program @permute(%a: !fusion.tensor<f32[4, 8]>) -> !fusion.tensor<f32[8 stream, 4]> {
  // CHECK: :[[# @LINE + 1]]:3: error: 'fusion.permute' op stream parallel type not supported for this op: only standalone set, cast, elementwise, matmul, linear, reduce, slice and select ops can be stream-parallelized
  %b = fusion.permute %a dims [1, 0] : !fusion.tensor<f32[4, 8]> -> !fusion.tensor<f32[8 stream, 4]>
  hir.return %b : !fusion.tensor<f32[8 stream, 4]>
}


// -----

// A chunk that is not a valid op: linear sliced on N would need a 1-D weight.
hir.program @linear_n(%x: !fusion.tensor<f32[8, 4]>, %w: !fusion.tensor<f32[2, 4]>) -> !fusion.tensor<f32[8, 2 stream, r4]> {
  // CHECK: :[[# @LINE + 1]]:3: error: 'fusion.linear' op cannot be computed one stream chunk at a time: linear needs an input of rank >= 1 and a [N, K] weight, got ranks 2 and 1
  %y = fusion.linear %x, %w : !fusion.tensor<f32[8, 4]>, !fusion.tensor<f32[2, 4]> -> !fusion.tensor<f32[8, 2 stream, r4]>
  hir.return %y : !fusion.tensor<f32[8, 2 stream, r4]>
}

// -----

// A reshape has no one-to-one axis map: its chunks are not reshapes of chunks.
hir.program @reshape(%a: !fusion.tensor<f32[4, 8]>) -> !fusion.tensor<f32[32 stream]> {
  // CHECK: :[[# @LINE + 1]]:3: error: 'fusion.reshape' op stream parallel type not supported for this op
  %b = fusion.reshape %a : !fusion.tensor<f32[4, 8]> -> !fusion.tensor<f32[32 stream]>
  hir.return %b : !fusion.tensor<f32[32 stream]>
}

// -----

// DID -> Stream: only a set moves whole shards between ranks (a ring of shifts).
hir.program @ring_add(%a: !fusion.tensor<f32[2 didx, 4], mesh=[0, 1]>) -> !fusion.tensor<f32[2 stream, 4], mesh=[0, 1]> {
  // CHECK: :[[# @LINE + 1]]:3: error: 'fusion.add' op reads axis 0 of an input sharded across devices one stream chunk at a time; only a set can turn a device axis into a stream axis (decompose-reshardings puts one in front)
  %b = fusion.add %a, %a : !fusion.tensor<f32[2 didx, 4], mesh=[0, 1]>, !fusion.tensor<f32[2 didx, 4], mesh=[0, 1]> -> !fusion.tensor<f32[2 stream, 4], mesh=[0, 1]>
  hir.return %b : !fusion.tensor<f32[2 stream, 4], mesh=[0, 1]>
}

// -----

// DID -> Stream over a split device axis: 4 chunks on 2 devices.
hir.program @ring_split_axis(%a: !fusion.tensor<f32[4(2 didx, 2), 8], mesh=[0, 1]>) -> !fusion.tensor<f32[4 stream, 8], mesh=[0, 1]> {
  // CHECK: :[[# @LINE + 1]]:3: error: 'fusion.set' op turns a split device axis into a stream axis of 4 chunks; a ring needs the whole axis over the 2 devices
  %b = fusion.set %a : !fusion.tensor<f32[4(2 didx, 2), 8], mesh=[0, 1]> -> !fusion.tensor<f32[4 stream, 8], mesh=[0, 1]>
  hir.return %b : !fusion.tensor<f32[4 stream, 8], mesh=[0, 1]>
}

// -----

// DID -> Stream on a 2-D mesh: each row would need its own position.
hir.program @ring_2d(%a: !fusion.tensor<f32[2 didx, 8], mesh=[[0, 1], [2, 3]]>) -> !fusion.tensor<f32[2 stream, 8], mesh=[[0, 1], [2, 3]]> {
  // CHECK: :[[# @LINE + 1]]:3: error: 'fusion.set' op turns a device axis into a stream axis on the 2-D mesh [[0, 1], [2, 3]]; a ring needs a 1-D mesh (this rank's position along one mesh axis)
  %b = fusion.set %a : !fusion.tensor<f32[2 didx, 8], mesh=[[0, 1], [2, 3]]> -> !fusion.tensor<f32[2 stream, 8], mesh=[[0, 1], [2, 3]]>
  hir.return %b : !fusion.tensor<f32[2 stream, 8], mesh=[[0, 1], [2, 3]]>
}

// -----

// DID -> Stream to another mesh.
hir.program @ring_meshes(%a: !fusion.tensor<f32[2 didx, 8], mesh=[0, 1]>) -> !fusion.tensor<f32[2 stream, 8], mesh=[1, 0]> {
  // CHECK: :[[# @LINE + 1]]:3: error: 'fusion.set' op turns a device axis into a stream axis from mesh [0, 1] to mesh [1, 0]; a ring stays on one mesh
  %b = fusion.set %a : !fusion.tensor<f32[2 didx, 8], mesh=[0, 1]> -> !fusion.tensor<f32[2 stream, 8], mesh=[1, 0]>
  hir.return %b : !fusion.tensor<f32[2 stream, 8], mesh=[1, 0]>
}

// -----

// A collective in the loop of a ring: ranks visit the chunks in different orders.
hir.program @ring_and_collective(%a: !fusion.tensor<f32[2 didx, 8], mesh=[0, 1]>) -> !fusion.tensor<f32[2 stream, 8(2 didx, 4)], mesh=[0, 1]> {
  %t = fusion.set %a : !fusion.tensor<f32[2 didx, 8], mesh=[0, 1]> -> !fusion.tensor<f32[2 stream, 8], mesh=[0, 1]>
  // CHECK: :[[# @LINE + 1]]:3: error: 'fusion.set' op communicates in a stream loop that runs a ring of shifts, where each rank handles the chunks in its own order; a collective needs them in one order
  %u = fusion.set %t : !fusion.tensor<f32[2 stream, 8], mesh=[0, 1]> -> !fusion.tensor<f32[2 stream, 8(2 didx, 4)], mesh=[0, 1]>
  hir.return %u : !fusion.tensor<f32[2 stream, 8(2 didx, 4)], mesh=[0, 1]>
}

// -----

// A fusion that lower-to-host has not turned into a program: its stream axes would stay
// unlowered.
// CHECK: stream_parallel_type_errors.mlir:[[# @LINE + 1]]:1: error: 'fusion.func' op has stream axes but the module holds no hir.program; run lower-to-host first
fusion.func @not_lowered(%a: !fusion.tensor<f32[4, 8]>) -> !fusion.tensor<f32[4 stream, 8]> {
  %b = fusion.set %a : !fusion.tensor<f32[4, 8]> -> !fusion.tensor<f32[4 stream, 8]>
  fusion.return %b : !fusion.tensor<f32[4 stream, 8]>
}
