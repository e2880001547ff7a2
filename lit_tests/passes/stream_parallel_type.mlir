// RUN: hostir-opt %s --split-input-file -p stream-parallel-type | filecheck %s

// nvFuser's HirLowerStreamTest shapes (tests/cpp/test_host_ir_stream_lowering.cpp). Top-level op counts: nvFuser's
// list (Allocate*, GetCurrentStream, ForLoop, ForLoop) plus, per loop, the three index
// constants of its bounds (in front of it) and the program's hir.return.

// SingleSetOp: allocate, get_current_stream, for (sync), for (main).
hir.program @single_set(%a: !fusion.tensor<f32[4, 8]>) -> !fusion.tensor<f32[4 stream, 8]> {
  %b = fusion.set %a : !fusion.tensor<f32[4, 8]> -> !fusion.tensor<f32[4 stream, 8]>
  hir.return %b : !fusion.tensor<f32[4 stream, 8]>
}
// CHECK-LABEL: hir.program @single_set
// CHECK-NEXT:    %c0 = arith.constant 0 : index
// CHECK-NEXT:    %c1 = arith.constant 1 : index
// CHECK-NEXT:    %extent = arith.constant 4 : index
// CHECK-NEXT:    %b = hir.allocate : !fusion.tensor<f32[4 stream, 8]>
// CHECK-NEXT:    %user_stream = hir.get_current_stream
// CHECK-NEXT:    scf.for %i = %c0 to %extent step %c1 {
// CHECK-NEXT:      %n = hir.number_of_streams
// CHECK-NEXT:      %key = arith.remui %i, %n : index
// CHECK-NEXT:      %worker = hir.stream %key
// CHECK-NEXT:      hir.set_current_stream %worker
// CHECK-NEXT:      hir.synchronize %user_stream
// CHECK-NEXT:    }
// CHECK-NEXT:    scf.for %[[I:.*]] = %c0 to %extent step %c1 {
// CHECK-NEXT:      %[[N:.*]] = hir.number_of_streams
// CHECK-NEXT:      %[[K:.*]] = arith.remui %[[I]], %[[N]] : index
// CHECK-NEXT:      %[[W:.*]] = hir.stream %[[K]]
// CHECK-NEXT:      hir.set_current_stream %[[W]]
// CHECK-NEXT:      %a_i = hir.alias_select %a[%[[I]]] axis 0 : !fusion.tensor<f32[4, 8]> -> !fusion.tensor<f32[8]>
// CHECK-NEXT:      %b_i = hir.alias_select %b[%[[I]]] axis 0 : !fusion.tensor<f32[4 stream, 8]> -> !fusion.tensor<f32[8]>
// CHECK-NEXT:      %{{.*}} = fusion.set %a_i into %b_i : !fusion.tensor<f32[8]> -> !fusion.tensor<f32[8]>
// CHECK-NEXT:      hir.set_current_stream %user_stream
// CHECK-NEXT:      hir.synchronize %[[W]]
// CHECK-NEXT:    }
// CHECK-NEXT:    hir.return %b : !fusion.tensor<f32[4 stream, 8]>

// -----

// SingleSetOpNonOutermost: the stream axis is axis 1; both tensors are sliced on it.
hir.program @non_outermost(%a: !fusion.tensor<f32[4, 8]>) -> !fusion.tensor<f32[4, 8 stream]> {
  %b = fusion.set %a : !fusion.tensor<f32[4, 8]> -> !fusion.tensor<f32[4, 8 stream]>
  hir.return %b : !fusion.tensor<f32[4, 8 stream]>
}
// CHECK-LABEL: hir.program @non_outermost
// CHECK:         %extent = arith.constant 8 : index
// CHECK-NEXT:    %b = hir.allocate : !fusion.tensor<f32[4, 8 stream]>
// CHECK-NEXT:    %user_stream = hir.get_current_stream
// CHECK-NEXT:    scf.for
// CHECK:         scf.for
// CHECK:           hir.set_current_stream
// CHECK-NEXT:      %a_i = hir.alias_select %a[%{{.*}}] axis 1 : !fusion.tensor<f32[4, 8]> -> !fusion.tensor<f32[4]>
// CHECK-NEXT:      %b_i = hir.alias_select %b[%{{.*}}] axis 1 : !fusion.tensor<f32[4, 8 stream]> -> !fusion.tensor<f32[4]>
// CHECK-NEXT:      fusion.set %a_i into %b_i

// -----

// SingleBinaryOp: both operands sliced.
hir.program @binary(%a: !fusion.tensor<f32[4, 4]>, %b: !fusion.tensor<f32[4, 4]>) -> !fusion.tensor<f32[4 stream, 4]> {
  %c = fusion.add %a, %b : !fusion.tensor<f32[4, 4]>, !fusion.tensor<f32[4, 4]> -> !fusion.tensor<f32[4 stream, 4]>
  hir.return %c : !fusion.tensor<f32[4 stream, 4]>
}
// CHECK-LABEL: hir.program @binary
// CHECK:         %extent = arith.constant 4 : index
// CHECK-NEXT:    %c = hir.allocate : !fusion.tensor<f32[4 stream, 4]>
// CHECK-NEXT:    %user_stream = hir.get_current_stream
// CHECK-NEXT:    scf.for
// CHECK:         scf.for
// CHECK:           hir.set_current_stream
// CHECK-NEXT:      %a_i = hir.alias_select %a
// CHECK-NEXT:      %b_i = hir.alias_select %b
// CHECK-NEXT:      %c_i = hir.alias_select %c
// CHECK-NEXT:      fusion.add %a_i, %b_i into %c_i : !fusion.tensor<f32[4]>, !fusion.tensor<f32[4]> -> !fusion.tensor<f32[4]>
// CHECK-NEXT:      hir.set_current_stream %user_stream

// -----

// TwoSetOps: two allocations, one merged loop with three selects and two sets; the
// second set reads the first one's chunk.
hir.program @two_sets(%a: !fusion.tensor<f32[4, 8]>) -> !fusion.tensor<f32[4 stream, 8]> {
  %b = fusion.set %a : !fusion.tensor<f32[4, 8]> -> !fusion.tensor<f32[4 stream, 8]>
  %c = fusion.set %b : !fusion.tensor<f32[4 stream, 8]> -> !fusion.tensor<f32[4 stream, 8]>
  hir.return %c : !fusion.tensor<f32[4 stream, 8]>
}
// CHECK-LABEL: hir.program @two_sets
// CHECK:         %extent = arith.constant 4 : index
// CHECK-NEXT:    %b = hir.allocate : !fusion.tensor<f32[4 stream, 8]>
// CHECK-NEXT:    %c = hir.allocate : !fusion.tensor<f32[4 stream, 8]>
// CHECK-NEXT:    %user_stream = hir.get_current_stream
// CHECK-NEXT:    scf.for
// CHECK:         scf.for
// CHECK:           hir.set_current_stream %worker
// CHECK-NEXT:      %a_i = hir.alias_select %a
// CHECK-NEXT:      %b_i = hir.alias_select %b
// CHECK-NEXT:      fusion.set %a_i into %b_i
// CHECK-NEXT:      %c_i = hir.alias_select %c
// CHECK-NEXT:      fusion.set %b_i into %c_i
// CHECK-NEXT:      hir.set_current_stream %user_stream
// CHECK-NEXT:      hir.synchronize
// CHECK-NEXT:    }
// CHECK-NEXT:    hir.return %c
// CHECK-NOT:     scf.for

// -----

// ThreeSetOpsWithDisjointsForLoops: %c is not stream-parallel, so it ends the first loop
// and runs on the whole buffer. nvFuser's nine top-level ops, in order: allocate,
// get_current_stream, for, for, set, allocate, get_current_stream, for, for (here plus
// three index constants per loop and the hir.return: 16 ops).
hir.program @three_sets(%a: !fusion.tensor<f32[4, 8]>) -> !fusion.tensor<f32[4 stream, 8]> {
  %b = fusion.set %a : !fusion.tensor<f32[4, 8]> -> !fusion.tensor<f32[4 stream, 8]>
  %c = fusion.set %b : !fusion.tensor<f32[4 stream, 8]> -> !fusion.tensor<f32[4, 8]>
  %d = fusion.set %c : !fusion.tensor<f32[4, 8]> -> !fusion.tensor<f32[4 stream, 8]>
  hir.return %d : !fusion.tensor<f32[4 stream, 8]>
}
// CHECK-LABEL: hir.program @three_sets
// CHECK-NEXT:    arith.constant 0 : index
// CHECK-NEXT:    arith.constant 1 : index
// CHECK-NEXT:    arith.constant 4 : index
// CHECK-NEXT:    %b = hir.allocate : !fusion.tensor<f32[4 stream, 8]>
// CHECK-NEXT:    hir.get_current_stream
// CHECK-NEXT:    scf.for
// CHECK:         {{^    }$}}
// CHECK-NEXT:    scf.for
// CHECK:           fusion.set %a_i into %b_i
// CHECK:         {{^    }$}}
// CHECK-NEXT:    %c = fusion.set %b : !fusion.tensor<f32[4 stream, 8]> -> !fusion.tensor<f32[4, 8]>
// CHECK-NEXT:    arith.constant 0 : index
// CHECK-NEXT:    arith.constant 1 : index
// CHECK-NEXT:    arith.constant 4 : index
// CHECK-NEXT:    %d = hir.allocate : !fusion.tensor<f32[4 stream, 8]>
// CHECK-NEXT:    hir.get_current_stream
// CHECK-NEXT:    scf.for
// CHECK:         {{^    }$}}
// CHECK-NEXT:    scf.for
// CHECK:           %c_i = hir.alias_select %c
// CHECK-NEXT:      %d_i = hir.alias_select %d
// CHECK-NEXT:      fusion.set %c_i into %d_i
// CHECK:         {{^    }$}}
// CHECK-NEXT:    hir.return %d

// -----

// Reduction: sum over axis 2, stream on axis 0; the chunk reduces its axis 1.
hir.program @reduction(%a: !fusion.tensor<f32[4, 8, 2]>) -> !fusion.tensor<f32[4 stream, 8, r2]> {
  %b = fusion.reduce sum %a dims [2] : !fusion.tensor<f32[4, 8, 2]> -> !fusion.tensor<f32[4 stream, 8, r2]>
  hir.return %b : !fusion.tensor<f32[4 stream, 8, r2]>
}
// CHECK-LABEL: hir.program @reduction
// CHECK:         %b = hir.allocate : !fusion.tensor<f32[4 stream, 8, r2]>
// CHECK-NEXT:    %user_stream = hir.get_current_stream
// CHECK-NEXT:    scf.for
// CHECK:         scf.for
// CHECK:           %a_i = hir.alias_select %a[%{{.*}}] axis 0 : !fusion.tensor<f32[4, 8, 2]> -> !fusion.tensor<f32[8, 2]>
// CHECK-NEXT:      %b_i = hir.alias_select %b[%{{.*}}] axis 0 : !fusion.tensor<f32[4 stream, 8, r2]> -> !fusion.tensor<f32[8, r2]>
// CHECK-NEXT:      fusion.reduce sum %a_i dims [1] into %b_i : !fusion.tensor<f32[8, 2]> -> !fusion.tensor<f32[8, r2]>

// -----

// Matmul_M: A's M axis is sliced (a chunk is a vector), B is passed whole.
hir.program @matmul_m(%a: !fusion.tensor<f32[8, 4]>, %b: !fusion.tensor<f32[4, 2]>) -> !fusion.tensor<f32[8 stream, 2, r4]> {
  %c = fusion.matmul %a, %b : !fusion.tensor<f32[8, 4]>, !fusion.tensor<f32[4, 2]> -> !fusion.tensor<f32[8 stream, 2, r4]>
  hir.return %c : !fusion.tensor<f32[8 stream, 2, r4]>
}
// CHECK-LABEL: hir.program @matmul_m
// CHECK:         %c = hir.allocate : !fusion.tensor<f32[8 stream, 2, r4]>
// CHECK-NEXT:    %user_stream = hir.get_current_stream
// CHECK-NEXT:    scf.for
// CHECK:         scf.for
// CHECK:           %a_i = hir.alias_select %a[%{{.*}}] axis 0 : !fusion.tensor<f32[8, 4]> -> !fusion.tensor<f32[4]>
// CHECK-NEXT:      %c_i = hir.alias_select %c[%{{.*}}] axis 0 : !fusion.tensor<f32[8 stream, 2, r4]> -> !fusion.tensor<f32[2, r4]>
// CHECK-NEXT:      fusion.matmul %a_i, %b into %c_i : !fusion.tensor<f32[4]>, !fusion.tensor<f32[4, 2]> -> !fusion.tensor<f32[2, r4]>

// -----

// BatchedMatmul: the batch axis is sliced.
hir.program @batched_matmul(%a: !fusion.tensor<f32[16, 8, 4]>, %b: !fusion.tensor<f32[4, 2]>) -> !fusion.tensor<f32[16 stream, 8, 2, r4]> {
  %c = fusion.matmul %a, %b : !fusion.tensor<f32[16, 8, 4]>, !fusion.tensor<f32[4, 2]> -> !fusion.tensor<f32[16 stream, 8, 2, r4]>
  hir.return %c : !fusion.tensor<f32[16 stream, 8, 2, r4]>
}
// CHECK-LABEL: hir.program @batched_matmul
// CHECK:         %extent = arith.constant 16 : index
// CHECK-NEXT:    %c = hir.allocate : !fusion.tensor<f32[16 stream, 8, 2, r4]>
// CHECK-NEXT:    %user_stream = hir.get_current_stream
// CHECK-NEXT:    scf.for
// CHECK:         scf.for
// CHECK:           %a_i = hir.alias_select %a[%{{.*}}] axis 0 : !fusion.tensor<f32[16, 8, 4]> -> !fusion.tensor<f32[8, 4]>
// CHECK-NEXT:      %c_i = hir.alias_select %c[%{{.*}}] axis 0
// CHECK-NEXT:      fusion.matmul %a_i, %b into %c_i : !fusion.tensor<f32[8, 4]>, !fusion.tensor<f32[4, 2]> -> !fusion.tensor<f32[8, 2, r4]>

// -----

// Matmul_N: the stream axis is N, so A is passed whole and B is sliced on its axis 1.
hir.program @matmul_n(%a: !fusion.tensor<f32[8, 4]>, %b: !fusion.tensor<f32[4, 2]>) -> !fusion.tensor<f32[8, 2 stream, r4]> {
  %c = fusion.matmul %a, %b : !fusion.tensor<f32[8, 4]>, !fusion.tensor<f32[4, 2]> -> !fusion.tensor<f32[8, 2 stream, r4]>
  hir.return %c : !fusion.tensor<f32[8, 2 stream, r4]>
}
// CHECK-LABEL: hir.program @matmul_n
// CHECK:         %extent = arith.constant 2 : index
// CHECK-NEXT:    %c = hir.allocate : !fusion.tensor<f32[8, 2 stream, r4]>
// CHECK-NEXT:    %user_stream = hir.get_current_stream
// CHECK-NEXT:    scf.for
// CHECK:         scf.for
// CHECK:           hir.set_current_stream %worker
// CHECK-NEXT:      %b_i = hir.alias_select %b[%{{.*}}] axis 1 : !fusion.tensor<f32[4, 2]> -> !fusion.tensor<f32[4]>
// CHECK-NEXT:      %c_i = hir.alias_select %c[%{{.*}}] axis 1 : !fusion.tensor<f32[8, 2 stream, r4]> -> !fusion.tensor<f32[8, r4]>
// CHECK-NEXT:      fusion.matmul %a, %b_i into %c_i : !fusion.tensor<f32[8, 4]>, !fusion.tensor<f32[4]> -> !fusion.tensor<f32[8, r4]>

// -----

// A dynamic stream extent: the trip count, and the extents of the loop's buffers, are
// read from the operands that provide them (traced back through the loop's ops: %c's
// extent is %a's, through %b).
hir.program @dynamic(%a: !fusion.tensor<f32[?, 8]>) -> !fusion.tensor<f32[? stream, 8]> {
  %b = fusion.set %a : !fusion.tensor<f32[?, 8]> -> !fusion.tensor<f32[? stream, 8]>
  %c = fusion.neg %b : !fusion.tensor<f32[? stream, 8]> -> !fusion.tensor<f32[? stream, 8]>
  hir.return %c : !fusion.tensor<f32[? stream, 8]>
}
// CHECK-LABEL: hir.program @dynamic
// CHECK:         %extent = hir.extent %a axis 0 : !fusion.tensor<f32[?, 8]>
// CHECK-NEXT:    %[[N:.+]] = hir.extent %a axis 0 : !fusion.tensor<f32[?, 8]>
// CHECK-NEXT:    %b = hir.allocate(%[[N]]) : !fusion.tensor<f32[? stream, 8]>
// CHECK-NEXT:    %[[M:.+]] = hir.extent %a axis 0 : !fusion.tensor<f32[?, 8]>
// CHECK-NEXT:    %c = hir.allocate(%[[M]]) : !fusion.tensor<f32[? stream, 8]>
// CHECK:         scf.for %i = %c0 to %extent step %c1 {

// -----

// Scalar ops between two stream ops do not end the loop: they move in front of it.
hir.program @scalar_between(%a: !fusion.tensor<f32[4, 8]>) -> !fusion.tensor<f32[4 stream, 8]> {
  %b = fusion.set %a : !fusion.tensor<f32[4, 8]> -> !fusion.tensor<f32[4 stream, 8]>
  %two = arith.constant 2.0 : f32
  %c = fusion.mul %b, %two : !fusion.tensor<f32[4 stream, 8]>, f32 -> !fusion.tensor<f32[4 stream, 8]>
  hir.return %c : !fusion.tensor<f32[4 stream, 8]>
}
// CHECK-LABEL: hir.program @scalar_between
// CHECK-NEXT:    %two = arith.constant 2.000000e+00 : f32
// CHECK-NEXT:    %c0 = arith.constant 0 : index
// CHECK:         %b = hir.allocate
// CHECK-NEXT:    %c = hir.allocate
// CHECK:         fusion.set %a_i into %b_i
// CHECK-NEXT:    %c_i = hir.alias_select %c
// CHECK-NEXT:    fusion.mul %b_i, %two into %c_i
// CHECK-NOT:     scf.for

// -----

// A broadcast operand axis maps to the stream axis: it is selected too (the runtime
// reads index 0 of a broadcast axis); an operand without a mapped axis is passed whole.
hir.program @broadcast_operand(%a: !fusion.tensor<f32[4, 8]>, %b: !fusion.tensor<f32[b1, 8]>, %c: !fusion.tensor<f32[4, 8]>) -> !fusion.tensor<f32[4 stream, 8]> {
  %d = fusion.add %a, %b : !fusion.tensor<f32[4, 8]>, !fusion.tensor<f32[b1, 8]> -> !fusion.tensor<f32[4 stream, 8]>
  hir.return %d : !fusion.tensor<f32[4 stream, 8]>
}
// CHECK-LABEL: hir.program @broadcast_operand
// CHECK:           %a_i = hir.alias_select %a[%{{.*}}] axis 0 : !fusion.tensor<f32[4, 8]> -> !fusion.tensor<f32[8]>
// CHECK-NEXT:      %b_i = hir.alias_select %b[%{{.*}}] axis 0 : !fusion.tensor<f32[b1, 8]> -> !fusion.tensor<f32[8]>
// CHECK-NEXT:      %d_i = hir.alias_select %d
// CHECK-NEXT:      fusion.add %a_i, %b_i into %d_i

// -----

// An op that would read, in one iteration, chunks other iterations write (%b is made
// along axis 0 but %c reads it along axis 1) starts a new loop, after the first one
// finished, and reads the whole buffer. nvFuser would merge them (its stream IDs map).
hir.program @transposed_reader(%a: !fusion.tensor<f32[4, 4]>) -> !fusion.tensor<f32[4, 4 stream]> {
  %b = fusion.set %a : !fusion.tensor<f32[4, 4]> -> !fusion.tensor<f32[4 stream, 4]>
  %c = fusion.set %b : !fusion.tensor<f32[4 stream, 4]> -> !fusion.tensor<f32[4, 4 stream]>
  hir.return %c : !fusion.tensor<f32[4, 4 stream]>
}
// CHECK-LABEL: hir.program @transposed_reader
// CHECK:         %b = hir.allocate
// CHECK-NEXT:    hir.get_current_stream
// CHECK:         fusion.set %a_i into %b_i
// CHECK:         %c = hir.allocate
// CHECK-NEXT:    hir.get_current_stream
// CHECK:         %b_i{{.*}} = hir.alias_select %b[%{{.*}}] axis 1
// CHECK-NEXT:    %c_i = hir.alias_select %c[%{{.*}}] axis 1

// -----

// Unrelated stream ops (no tensor in common) of one extent share a loop: iteration i
// computes chunk i of each, so one pipeline's communication can hide behind the other's
// compute (nvFuser's IdModel gives them separate loops).
hir.program @unrelated(%a: !fusion.tensor<f32[4, 8]>, %b: !fusion.tensor<f32[4, 8]>) -> (!fusion.tensor<f32[4 stream, 8]>, !fusion.tensor<f32[4 stream, 8]>) {
  %c = fusion.set %a : !fusion.tensor<f32[4, 8]> -> !fusion.tensor<f32[4 stream, 8]>
  %d = fusion.set %b : !fusion.tensor<f32[4, 8]> -> !fusion.tensor<f32[4 stream, 8]>
  hir.return %c, %d : !fusion.tensor<f32[4 stream, 8]>, !fusion.tensor<f32[4 stream, 8]>
}
// CHECK-LABEL: hir.program @unrelated
// CHECK-COUNT-2: scf.for
// CHECK:           fusion.set %a_i into %c_i
// CHECK-NEXT:      %b_i = hir.alias_select %b
// CHECK-NEXT:      %d_i = hir.alias_select %d
// CHECK-NEXT:      fusion.set %b_i into %d_i
// CHECK-NOT:     scf.for

// -----

// Slice and select chunks: their per-axis attributes lose the sliced axis; sharded
// tensors keep their mesh and device axes in the chunk types.
hir.program @slice_select(%a: !fusion.tensor<f32[4, 2 didx, 8], mesh=[0, 1]>) -> (!fusion.tensor<f32[4 stream, 2 didx, 4], mesh=[0, 1]>, !fusion.tensor<f32[4 stream, 2 didx], mesh=[0, 1]>) {
  %b = fusion.slice %a starts [0, 0, 2] stops [4, 2, 6] steps [1, 1, 1] : !fusion.tensor<f32[4, 2 didx, 8], mesh=[0, 1]> -> !fusion.tensor<f32[4 stream, 2 didx, 4], mesh=[0, 1]>
  %k = arith.constant 1 : index
  %c = fusion.select %b[%k] dim 2 : !fusion.tensor<f32[4 stream, 2 didx, 4], mesh=[0, 1]>, index -> !fusion.tensor<f32[4 stream, 2 didx], mesh=[0, 1]>
  hir.return %b, %c : !fusion.tensor<f32[4 stream, 2 didx, 4], mesh=[0, 1]>, !fusion.tensor<f32[4 stream, 2 didx], mesh=[0, 1]>
}
// CHECK-LABEL: hir.program @slice_select
// CHECK:           %a_i = hir.alias_select %a[%{{.*}}] axis 0 : !fusion.tensor<f32[4, 2 didx, 8], mesh=[0, 1]> -> !fusion.tensor<f32[2 didx, 8], mesh=[0, 1]>
// CHECK-NEXT:      %b_i = hir.alias_select %b
// CHECK-NEXT:      fusion.slice %a_i starts [0, 2] stops [2, 6] steps [1, 1] into %b_i : !fusion.tensor<f32[2 didx, 8], mesh=[0, 1]> -> !fusion.tensor<f32[2 didx, 4], mesh=[0, 1]>
// CHECK-NEXT:      %c_i = hir.alias_select %c
// CHECK-NEXT:      fusion.select %b_i[%k] dim 1 into %c_i : !fusion.tensor<f32[2 didx, 4], mesh=[0, 1]>, index -> !fusion.tensor<f32[2 didx], mesh=[0, 1]>

// -----

// A tensor finalize-multidevice-domains marked stream-allocated (one chunk per buffer)
// still gets a full-size buffer here, since every iteration writes its own chunk of it
// (see bounded-intermediates for chunk buffers).
hir.program @stream_allocated(%a: !fusion.tensor<f32[4, 8]>) -> !fusion.tensor<f32[4 stream, 8]> {
  %b = fusion.neg %a : !fusion.tensor<f32[4, 8]> -> !fusion.tensor<f32[4 stream, 8], alloc=[0 stream, 1]>
  %c = fusion.neg %b : !fusion.tensor<f32[4 stream, 8], alloc=[0 stream, 1]> -> !fusion.tensor<f32[4 stream, 8]>
  hir.return %c : !fusion.tensor<f32[4 stream, 8]>
}
// CHECK-LABEL: hir.program @stream_allocated
// CHECK:         %b = hir.allocate : !fusion.tensor<f32[4 stream, 8]>
// CHECK:           %b_i = hir.alias_select %b[%{{.*}}] axis 0 : !fusion.tensor<f32[4 stream, 8]> -> !fusion.tensor<f32[8]>
// CHECK-NEXT:      fusion.neg %a_i into %b_i

// -----

// A slice with a start and a step on the stream axis: chunk i reads input chunk 1 + 2 * i.
hir.program @strided_slice(%a: !fusion.tensor<f32[7, 3]>) -> !fusion.tensor<f32[3 stream, 3]> {
  %b = fusion.slice %a starts [1, 0] stops [7, 3] steps [2, 1] : !fusion.tensor<f32[7, 3]> -> !fusion.tensor<f32[3 stream, 3]>
  hir.return %b : !fusion.tensor<f32[3 stream, 3]>
}
// CHECK-LABEL: hir.program @strided_slice
// CHECK:         scf.for
// CHECK:         scf.for %[[I:.*]] = %c0 to %extent step %c1 {
// CHECK:           hir.set_current_stream
// CHECK-NEXT:      %step = arith.constant 2 : index
// CHECK-NEXT:      %[[SCALED:.*]] = arith.muli %[[I]], %step : index
// CHECK-NEXT:      %start = arith.constant 1 : index
// CHECK-NEXT:      %[[J:.*]] = arith.addi %[[SCALED]], %start : index
// CHECK-NEXT:      %a_i = hir.alias_select %a[%[[J]]] axis 0 : !fusion.tensor<f32[7, 3]> -> !fusion.tensor<f32[3]>
// CHECK-NEXT:      %b_i = hir.alias_select %b[%[[I]]] axis 0 : !fusion.tensor<f32[3 stream, 3]> -> !fusion.tensor<f32[3]>
// CHECK-NEXT:      %{{.*}} = fusion.slice %a_i starts [0] stops [3] steps [1] into %b_i : !fusion.tensor<f32[3]> -> !fusion.tensor<f32[3]>

// -----

// Stream only schedules: an op whose chunks are not the op of chunks runs whole, outside
// any loop (a Stream piece of a split axis whose axis a reshape merges -- with a warning --,
// a reduced stream axis, linear on N -- a chunk would need a 1-D weight --, a reshape
// merging the stream axis, a post with a result lacking a stream axis, an op that already
// has a destination).
hir.program @split(%a: !fusion.tensor<f32[8, 4]>) -> !fusion.tensor<f32[32(2 stream, 16)]> {
  %b = fusion.reshape %a : !fusion.tensor<f32[8, 4]> -> !fusion.tensor<f32[32(2 stream, 16)]>
  hir.return %b : !fusion.tensor<f32[32(2 stream, 16)]>
}
hir.program @reduction_axis(%a: !fusion.tensor<f32[4, 8]>) -> !fusion.tensor<f32[r4 stream, 8]> {
  %b = fusion.reduce sum %a dims [0] : !fusion.tensor<f32[4, 8]> -> !fusion.tensor<f32[r4 stream, 8]>
  hir.return %b : !fusion.tensor<f32[r4 stream, 8]>
}
hir.program @matmul_k(%a: !fusion.tensor<f32[8, 4]>, %b: !fusion.tensor<f32[4, 2]>) -> !fusion.tensor<f32[8, 2, r4 stream]> {
  %c = fusion.matmul %a, %b : !fusion.tensor<f32[8, 4]>, !fusion.tensor<f32[4, 2]> -> !fusion.tensor<f32[8, 2, r4 stream]>
  hir.return %c : !fusion.tensor<f32[8, 2, r4 stream]>
}
hir.program @linear_n(%x: !fusion.tensor<f32[8, 4]>, %w: !fusion.tensor<f32[2, 4]>) -> !fusion.tensor<f32[8, 2 stream, r4]> {
  %y = fusion.linear %x, %w : !fusion.tensor<f32[8, 4]>, !fusion.tensor<f32[2, 4]> -> !fusion.tensor<f32[8, 2 stream, r4]>
  hir.return %y : !fusion.tensor<f32[8, 2 stream, r4]>
}
hir.program @reshape(%a: !fusion.tensor<f32[4, 8]>) -> !fusion.tensor<f32[32 stream]> {
  %b = fusion.reshape %a : !fusion.tensor<f32[4, 8]> -> !fusion.tensor<f32[32 stream]>
  hir.return %b : !fusion.tensor<f32[32 stream]>
}
fusion.func @two_results(%a: !fusion.tensor<f32[4, 8]>) -> (!fusion.tensor<f32[4 stream, 8]>, !fusion.tensor<f32[4, 8]>) {
  %b = fusion.abs %a : !fusion.tensor<f32[4, 8]> -> !fusion.tensor<f32[4 stream, 8]>
  %c = fusion.neg %a : !fusion.tensor<f32[4, 8]> -> !fusion.tensor<f32[4, 8]>
  fusion.return %b, %c : !fusion.tensor<f32[4 stream, 8]>, !fusion.tensor<f32[4, 8]>
}
hir.program @several_results(%a: !fusion.tensor<f32[4, 8]>) -> !fusion.tensor<f32[4 stream, 8]> {
  %b, %c = hir.post_on_stream @two_results(%a) : (!fusion.tensor<f32[4, 8]>) -> (!fusion.tensor<f32[4 stream, 8]>, !fusion.tensor<f32[4, 8]>)
  hir.return %b : !fusion.tensor<f32[4 stream, 8]>
}
hir.program @already_lowered(%a: !fusion.tensor<f32[4, 8]>) -> !fusion.tensor<f32[4 stream, 8]> {
  %b = hir.allocate : !fusion.tensor<f32[4 stream, 8]>
  %c = fusion.set %a into %b : !fusion.tensor<f32[4, 8]> -> !fusion.tensor<f32[4 stream, 8]>
  hir.return %c : !fusion.tensor<f32[4 stream, 8]>
}
// CHECK-LABEL: hir.program @split
// CHECK-NEXT:    %b = fusion.reshape %a :
// CHECK-NEXT:    hir.return %b
// CHECK-LABEL: hir.program @reduction_axis
// CHECK-NEXT:    %b = fusion.reduce sum %a dims [0] :
// CHECK-NEXT:    hir.return %b
// CHECK-LABEL: hir.program @matmul_k
// CHECK-NEXT:    %c = fusion.matmul %a, %b :
// CHECK-NEXT:    hir.return %c
// CHECK-LABEL: hir.program @linear_n
// CHECK-NEXT:    %y = fusion.linear %x, %w :
// CHECK-NEXT:    hir.return %y
// CHECK-LABEL: hir.program @reshape
// CHECK-NEXT:    %b = fusion.reshape %a :
// CHECK-NEXT:    hir.return %b
// CHECK:       fusion.func @two_results(%a: !fusion.tensor<f32[4, 8]>) -> (!fusion.tensor<f32[4 stream, 8]>, !fusion.tensor<f32[4, 8]>)
// CHECK-LABEL: hir.program @several_results
// CHECK-NEXT:    %b, %c = hir.post_on_stream @two_results(%a) :
// CHECK-NEXT:    hir.return %b
// CHECK-LABEL: hir.program @already_lowered
// CHECK-NEXT:    %b = hir.allocate
// CHECK-NEXT:    %c = fusion.set %a into %b :
// CHECK-NEXT:    hir.return %c

// -----

// A kernel unit whose ops all map the stream axis (beyond nvFuser) joins the loop of the
// matmul it feeds; its only caller, it is rewritten in place to compute one chunk.
fusion.func @unit(%a: !fusion.tensor<f32[4, 8]>) -> !fusion.tensor<f32[4 stream, 8]> {
  %z = fusion.abs %a : !fusion.tensor<f32[4, 8]> -> !fusion.tensor<f32[4, 8]>
  %b = fusion.neg %z : !fusion.tensor<f32[4, 8]> -> !fusion.tensor<f32[4 stream, 8]>
  fusion.return %b : !fusion.tensor<f32[4 stream, 8]>
}
hir.program @post_feeds_matmul(%a: !fusion.tensor<f32[4, 8]>, %w: !fusion.tensor<f32[8, 2]>) -> !fusion.tensor<f32[4 stream, 2, r8]> {
  %b = hir.post_on_stream @unit(%a) : (!fusion.tensor<f32[4, 8]>) -> !fusion.tensor<f32[4 stream, 8]>
  %c = fusion.matmul %b, %w : !fusion.tensor<f32[4 stream, 8]>, !fusion.tensor<f32[8, 2]> -> !fusion.tensor<f32[4 stream, 2, r8]>
  hir.return %c : !fusion.tensor<f32[4 stream, 2, r8]>
}
// CHECK:       fusion.func @unit(%a: !fusion.tensor<f32[8]>) -> !fusion.tensor<f32[8]> {
// CHECK-NEXT:    %z = fusion.abs %a : !fusion.tensor<f32[8]> -> !fusion.tensor<f32[8]>
// CHECK-NEXT:    %b = fusion.neg %z : !fusion.tensor<f32[8]> -> !fusion.tensor<f32[8]>
// CHECK-NEXT:    fusion.return %b : !fusion.tensor<f32[8]>
// CHECK-LABEL: hir.program @post_feeds_matmul
// CHECK:         %b = hir.allocate : !fusion.tensor<f32[4 stream, 8]>
// CHECK-NEXT:    %c = hir.allocate : !fusion.tensor<f32[4 stream, 2, r8]>
// CHECK:         scf.for
// CHECK:         scf.for
// CHECK:           %a_i = hir.alias_select %a[%{{.*}}] axis 0 : !fusion.tensor<f32[4, 8]> -> !fusion.tensor<f32[8]>
// CHECK-NEXT:      %b_i = hir.alias_select %b[%{{.*}}] axis 0 : !fusion.tensor<f32[4 stream, 8]> -> !fusion.tensor<f32[8]>
// CHECK-NEXT:      hir.post_on_stream @unit(%a_i) outs(%b_i : !fusion.tensor<f32[8]>) : (!fusion.tensor<f32[8]>) -> !fusion.tensor<f32[8]>
// CHECK-NEXT:      %c_i = hir.alias_select %c[%{{.*}}] axis 0
// CHECK-NEXT:      fusion.matmul %b_i, %w into %c_i : !fusion.tensor<f32[8]>, !fusion.tensor<f32[8, 2]> -> !fusion.tensor<f32[2, r8]>

// -----

// A permute is sliced along the input axis its stream axis comes from.
hir.program @permute(%a: !fusion.tensor<f32[4, 8]>) -> !fusion.tensor<f32[8 stream, 4]> {
  %b = fusion.permute %a dims [1, 0] : !fusion.tensor<f32[4, 8]> -> !fusion.tensor<f32[8 stream, 4]>
  hir.return %b : !fusion.tensor<f32[8 stream, 4]>
}
// CHECK-LABEL: hir.program @permute
// CHECK:           %a_i = hir.alias_select %a[%{{.*}}] axis 1 : !fusion.tensor<f32[4, 8]> -> !fusion.tensor<f32[4]>
// CHECK-NEXT:      %b_i = hir.alias_select %b[%{{.*}}] axis 0 : !fusion.tensor<f32[8 stream, 4]> -> !fusion.tensor<f32[4]>
// CHECK-NEXT:      fusion.permute %a_i dims [0] into %b_i : !fusion.tensor<f32[4]> -> !fusion.tensor<f32[4]>

// -----

// DID -> Stream: a ring of shifts, every op of the loop on chunk (i + me) mod D.
hir.program @ring(%a: !fusion.tensor<f32[2 didx, 8], mesh=[0, 1]>) -> !fusion.tensor<f32[2 stream, 8], mesh=[0, 1]> {
  %t = fusion.set %a : !fusion.tensor<f32[2 didx, 8], mesh=[0, 1]> -> !fusion.tensor<f32[2 stream, 8], mesh=[0, 1]>
  %b = fusion.neg %t : !fusion.tensor<f32[2 stream, 8], mesh=[0, 1]> -> !fusion.tensor<f32[2 stream, 8], mesh=[0, 1]>
  hir.return %b : !fusion.tensor<f32[2 stream, 8], mesh=[0, 1]>
}
// CHECK-LABEL: hir.program @ring
// CHECK:           %me = hir.team_position team [0, 1]
// CHECK-NEXT:      %team_size = arith.constant 2 : index
// CHECK-NEXT:      %[[SUM:.*]] = arith.addi %[[I:.*]], %me : index
// CHECK-NEXT:      %member = arith.remui %[[SUM]], %team_size : index
// CHECK-NEXT:      %t_i = hir.alias_select %t[%member] axis 0
// CHECK-NEXT:      %w = hir.shift %a -> %t_i team [0, 1] offset %[[I]]
// CHECK-NEXT:      hir.wait %w
// CHECK-NEXT:      %b_i = hir.alias_select %b[%member] axis 0
// CHECK-NEXT:      fusion.neg %t_i into %b_i

// -----

// nvFuser's spelling (`outer_split(0, D)`, DIDx on the outer piece, then Stream on the
// outer piece of the result's split): chunk p is block p of the axis, member p's whole
// shard, so it is a ring too, on narrowed chunks.
hir.program @ring_split(%a: !fusion.tensor<f32[8(2 didx, 4), 3], mesh=[0, 1]>) -> !fusion.tensor<f32[8(2 stream, 4), 3], mesh=[0, 1]> {
  %t = fusion.set %a : !fusion.tensor<f32[8(2 didx, 4), 3], mesh=[0, 1]> -> !fusion.tensor<f32[8(2 stream, 4), 3], mesh=[0, 1]>
  %b = fusion.neg %t : !fusion.tensor<f32[8(2 stream, 4), 3], mesh=[0, 1]> -> !fusion.tensor<f32[8(2 stream, 4), 3], mesh=[0, 1]>
  hir.return %b : !fusion.tensor<f32[8(2 stream, 4), 3], mesh=[0, 1]>
}
// CHECK-LABEL: hir.program @ring_split
// CHECK:           %member = arith.remui %{{.*}}, %team_size : index
// CHECK-NEXT:      %t_i = hir.alias_chunk %t[%member] axis 0 parts 2 : !fusion.tensor<f32[8(2 stream, 4), 3], mesh=[0, 1]> -> !fusion.tensor<f32[4, 3], mesh=[0, 1]>
// CHECK-NEXT:      %w = hir.shift %a -> %t_i team [0, 1] offset %{{.*}} : !fusion.tensor<f32[8(2 didx, 4), 3], mesh=[0, 1]> -> !fusion.tensor<f32[4, 3], mesh=[0, 1]>
// CHECK-NEXT:      hir.wait %w
// CHECK-NEXT:      %b_i = hir.alias_chunk %b[%member] axis 0 parts 2
// CHECK-NEXT:      fusion.neg %t_i into %b_i : !fusion.tensor<f32[4, 3], mesh=[0, 1]> -> !fusion.tensor<f32[4, 3], mesh=[0, 1]>

// -----

// A collective does not join a ring's loop (ranks visit its chunks in different
// orders): it runs in a loop of its own, in chunk order.
hir.program @ring_and_collective(%a: !fusion.tensor<f32[2 didx, 8], mesh=[0, 1]>) -> !fusion.tensor<f32[2 stream, 8(2 didx, 4)], mesh=[0, 1]> {
  %t = fusion.set %a : !fusion.tensor<f32[2 didx, 8], mesh=[0, 1]> -> !fusion.tensor<f32[2 stream, 8], mesh=[0, 1]>
  %u = fusion.set %t : !fusion.tensor<f32[2 stream, 8], mesh=[0, 1]> -> !fusion.tensor<f32[2 stream, 8(2 didx, 4)], mesh=[0, 1]>
  hir.return %u : !fusion.tensor<f32[2 stream, 8(2 didx, 4)], mesh=[0, 1]>
}
// CHECK-LABEL: hir.program @ring_and_collective
// CHECK:           hir.shift %a -> %t_i
// CHECK:           hir.synchronize
// CHECK-NEXT:    }
// CHECK:           %[[T:.*]] = hir.alias_select %t[%[[J:.*]]] axis 0
// CHECK-NEXT:      %u_i = hir.alias_select %u[%[[J]]] axis 0
// CHECK-NEXT:      fusion.set %[[T]] into %u_i

// -----

// What a ring cannot compute runs whole: a set to another mesh, on a 2-D mesh, over a
// split device axis streamed whole (chunk p is not member p's shard), and an op other
// than a set reading a device axis chunk by chunk.
hir.program @not_rings(%a: !fusion.tensor<f32[2 didx, 8], mesh=[0, 1]>, %m: !fusion.tensor<f32[2 didx, 8], mesh=[[0, 1], [2, 3]]>, %s: !fusion.tensor<f32[4(2 didx, 2), 8], mesh=[0, 1]>) -> (!fusion.tensor<f32[2 stream, 8], mesh=[1, 0]>, !fusion.tensor<f32[2 stream, 8], mesh=[[0, 1], [2, 3]]>, !fusion.tensor<f32[4 stream, 8], mesh=[0, 1]>, !fusion.tensor<f32[2 stream, 8], mesh=[0, 1]>) {
  %b = fusion.set %a : !fusion.tensor<f32[2 didx, 8], mesh=[0, 1]> -> !fusion.tensor<f32[2 stream, 8], mesh=[1, 0]>
  %c = fusion.set %m : !fusion.tensor<f32[2 didx, 8], mesh=[[0, 1], [2, 3]]> -> !fusion.tensor<f32[2 stream, 8], mesh=[[0, 1], [2, 3]]>
  %d = fusion.set %s : !fusion.tensor<f32[4(2 didx, 2), 8], mesh=[0, 1]> -> !fusion.tensor<f32[4 stream, 8], mesh=[0, 1]>
  %e = fusion.add %a, %a : !fusion.tensor<f32[2 didx, 8], mesh=[0, 1]>, !fusion.tensor<f32[2 didx, 8], mesh=[0, 1]> -> !fusion.tensor<f32[2 stream, 8], mesh=[0, 1]>
  hir.return %b, %c, %d, %e : !fusion.tensor<f32[2 stream, 8], mesh=[1, 0]>, !fusion.tensor<f32[2 stream, 8], mesh=[[0, 1], [2, 3]]>, !fusion.tensor<f32[4 stream, 8], mesh=[0, 1]>, !fusion.tensor<f32[2 stream, 8], mesh=[0, 1]>
}
// CHECK-LABEL: hir.program @not_rings
// CHECK-NEXT:    %b = fusion.set %a :
// CHECK-NEXT:    %c = fusion.set %m :
// CHECK-NEXT:    %d = fusion.set %s :
// CHECK-NEXT:    %e = fusion.add %a, %a :
// CHECK-NEXT:    hir.return %b, %c, %d, %e

// -----

// Host code the pass built before, or the user wrote (stream-typed buffers, ops writing
// into them, a stream-typed input sliced by the program itself), is left as it is: the
// pass only puts the ops lower-to-host leaves (compute ops without destination, posts
// without outs) in loops, so it may run twice.
hir.program @already_lowered(%a: !fusion.tensor<f32[4 stream, 8]>) -> !fusion.tensor<f32[4 stream, 8]> {
  %b = hir.allocate : !fusion.tensor<f32[4 stream, 8]>
  %c = fusion.set %a into %b : !fusion.tensor<f32[4 stream, 8]> -> !fusion.tensor<f32[4 stream, 8]>
  hir.return %c : !fusion.tensor<f32[4 stream, 8]>
}
// CHECK-LABEL: hir.program @already_lowered
// CHECK-NEXT:    %b = hir.allocate : !fusion.tensor<f32[4 stream, 8]>
// CHECK-NEXT:    %c = fusion.set %a into %b : !fusion.tensor<f32[4 stream, 8]> -> !fusion.tensor<f32[4 stream, 8]>
// CHECK-NEXT:    hir.return %c : !fusion.tensor<f32[4 stream, 8]>

// -----

// An op between two sliced matmuls that reads only values from before the loop (the
// reshape of a weight an rFactor inserts) moves in front of the loop instead of ending
// it: one loop for both matmuls, as one layer.
!x = !fusion.tensor<f32[4, 2, 8]>
!w = !fusion.tensor<f32[8, 8]>
!g = !fusion.tensor<f32[4 stream, 2, 8, r8]>
!v = !fusion.tensor<f32[64]>
!y = !fusion.tensor<f32[4 stream, 2, 8, r8]>
hir.program @hoisted(%x: !x, %w1: !w, %w2: !v) -> !y {
  %g = fusion.matmul %x, %w1 : !x, !w -> !g
  %w = fusion.reshape %w2 : !v -> !w
  %y = fusion.matmul %g, %w : !g, !w -> !y
  hir.return %y : !y
}
// CHECK-LABEL: hir.program @hoisted
// CHECK-NEXT:    %w = fusion.reshape %w2 : !fusion.tensor<f32[64]> -> !fusion.tensor<f32[8, 8]>
// CHECK:         scf.for
// CHECK:         scf.for %[[I:.*]] = %c0 to %extent step %c1 {
// CHECK:           %{{.*}} = fusion.matmul %x_i, %w1 into %g_i
// CHECK:           %{{.*}} = fusion.matmul %g_i, %w into %y_i
// CHECK:         }
// CHECK-NOT:     scf.for
// CHECK:         hir.return %y

// -----

// An op that reads what the loop computes still ends it.
!x = !fusion.tensor<f32[4, 2, 8]>
!w = !fusion.tensor<f32[8, 8]>
!g = !fusion.tensor<f32[4 stream, 2, 8, r8]>
!s = !fusion.tensor<f32[r4, 2, 8]>
hir.program @not_hoisted(%x: !x, %w1: !w) -> !s {
  %g = fusion.matmul %x, %w1 : !x, !w -> !g
  %s = fusion.reduce sum %g dims [0] : !g -> !s
  hir.return %s : !s
}
// CHECK-LABEL: hir.program @not_hoisted
// CHECK:         scf.for
// CHECK:         scf.for
// CHECK:           fusion.matmul
// CHECK:         }
// CHECK-NEXT:    %s = fusion.reduce sum %g dims [0]
