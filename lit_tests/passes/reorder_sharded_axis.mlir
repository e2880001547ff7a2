// RUN: hostir-opt %s --split-input-file -p reorder-sharded-axis | filecheck %s
// RUN: hostir-opt %s --split-input-file -p 'hostir-lower{transport=nccl}' | filecheck %s --check-prefix=LOWER

// Each communication laid out as its collective needs: local copies (sets with an
// allocation order) around it, or a split of the scattered axis of an all-to-all. The LOWER
// prefix checks what the collectives and loops of the whole pipeline make of them.

// Allgather of an inner axis [i0, D(i1)] -> [i0, i1]: the result is received with i1
// outermost, then copied to its logical layout (the input's i1 is one element per device).
// CHECK-LABEL: fusion.func @allgather_inner(
// CHECK-NEXT:    %y = fusion.set %x : !fusion.tensor<f32[4, 2 didx], mesh=[0, 1]> -> !fusion.tensor<f32[4, 2], mesh=[0, 1], alloc=[1, 0]>
// CHECK-NEXT:    %y_1 = fusion.set %y : !fusion.tensor<f32[4, 2], mesh=[0, 1], alloc=[1, 0]> -> !fusion.tensor<f32[4, 2], mesh=[0, 1]>
// CHECK-NEXT:    fusion.return %y_1 : !fusion.tensor<f32[4, 2], mesh=[0, 1]>
// CHECK-NEXT:  }
// LOWER-LABEL: hir.program @allgather_inner(
// LOWER-NEXT:    %y = hir.allocate : !fusion.tensor<f32[4, 2], mesh=[0, 1], alloc=[1, 0]>
// LOWER-NEXT:    %[[W:.+]] = hir.allgather %x -> %y team [0, 1] : !fusion.tensor<f32[4, 2 didx], mesh=[0, 1]> -> !fusion.tensor<f32[4, 2], mesh=[0, 1], alloc=[1, 0]>
// LOWER-NEXT:    hir.wait %[[W]]
// LOWER-NEXT:    %y_1 = fusion.set %y
fusion.func @allgather_inner(%x: !fusion.tensor<f32[4, 2 didx], mesh=[0, 1]>) -> !fusion.tensor<f32[4, 2], mesh=[0, 1]> {
  %y = fusion.set %x : !fusion.tensor<f32[4, 2 didx], mesh=[0, 1]> -> !fusion.tensor<f32[4, 2], mesh=[0, 1]>
  fusion.return %y : !fusion.tensor<f32[4, 2], mesh=[0, 1]>
}

// -----

// A column-major input (the user's layout) is copied to one with the gathered axis outermost.
// CHECK-LABEL: fusion.func @allgather_column_major(
// CHECK-NEXT:    %0 = fusion.set %x : !fusion.tensor<f32[4(2 didx, 2), 8], mesh=[0, 1], alloc=[1, 0]> -> !fusion.tensor<f32[4(2 didx, 2), 8], mesh=[0, 1]>
// CHECK-NEXT:    %y = fusion.set %0 : !fusion.tensor<f32[4(2 didx, 2), 8], mesh=[0, 1]> -> !fusion.tensor<f32[4, 8], mesh=[0, 1]>
// CHECK-NEXT:    fusion.return %y : !fusion.tensor<f32[4, 8], mesh=[0, 1]>
// CHECK-NEXT:  }
fusion.func @allgather_column_major(%x: !fusion.tensor<f32[4(2 didx, 2), 8], mesh=[0, 1], alloc=[1, 0]>) -> !fusion.tensor<f32[4, 8], mesh=[0, 1]> {
  %y = fusion.set %x : !fusion.tensor<f32[4(2 didx, 2), 8], mesh=[0, 1], alloc=[1, 0]> -> !fusion.tensor<f32[4, 8], mesh=[0, 1]>
  fusion.return %y : !fusion.tensor<f32[4, 8], mesh=[0, 1]>
}

// -----

// Scatter of an inner axis: both buffers put i1 outermost, copies on both sides.
// CHECK-LABEL: fusion.func @scatter_inner(
// CHECK-NEXT:    %0 = fusion.set %x : !fusion.tensor<f32[8, 4], mesh=[0]> -> !fusion.tensor<f32[8, 4], mesh=[0], alloc=[1, 0]>
// CHECK-NEXT:    %y = fusion.set %0 : !fusion.tensor<f32[8, 4], mesh=[0], alloc=[1, 0]> -> !fusion.tensor<f32[8, 4(2 didx, 2)], mesh=[0, 1], alloc=[1, 0]>
// CHECK-NEXT:    %y_1 = fusion.set %y : !fusion.tensor<f32[8, 4(2 didx, 2)], mesh=[0, 1], alloc=[1, 0]> -> !fusion.tensor<f32[8, 4(2 didx, 2)], mesh=[0, 1]>
// CHECK-NEXT:    fusion.return %y_1 : !fusion.tensor<f32[8, 4(2 didx, 2)], mesh=[0, 1]>
// CHECK-NEXT:  }
fusion.func @scatter_inner(%x: !fusion.tensor<f32[8, 4], mesh=[0]>) -> !fusion.tensor<f32[8, 4(2 didx, 2)], mesh=[0, 1]> {
  %y = fusion.set %x : !fusion.tensor<f32[8, 4], mesh=[0]> -> !fusion.tensor<f32[8, 4(2 didx, 2)], mesh=[0, 1]>
  fusion.return %y : !fusion.tensor<f32[8, 4(2 didx, 2)], mesh=[0, 1]>
}

// -----

// ReduceScatter onto an inner axis: copies on both sides; the copy after the reduce has
// the value's type, so the returned type loses its reduction axis (as nvFuser's permute back).
// CHECK-LABEL: fusion.func @reduce_scatter_inner(
// CHECK-NEXT:    %0 = fusion.set %x : !fusion.tensor<f32[2 didx, 4, 8], mesh=[0, 1]> -> !fusion.tensor<f32[2 didx, 4, 8], mesh=[0, 1], alloc=[2, 0, 1]>
// CHECK-NEXT:    %y = fusion.reduce sum %0 dims [0] : !fusion.tensor<f32[2 didx, 4, 8], mesh=[0, 1], alloc=[2, 0, 1]> -> !fusion.tensor<f32[r2, 4, 8(2 didx, 4)], mesh=[0, 1], alloc=[2, 0, 1]>
// CHECK-NEXT:    %y_1 = fusion.set %y : !fusion.tensor<f32[r2, 4, 8(2 didx, 4)], mesh=[0, 1], alloc=[2, 0, 1]> -> !fusion.tensor<f32[4, 8(2 didx, 4)], mesh=[0, 1]>
// CHECK-NEXT:    fusion.return %y_1 : !fusion.tensor<f32[4, 8(2 didx, 4)], mesh=[0, 1]>
// CHECK-NEXT:  }
fusion.func @reduce_scatter_inner(%x: !fusion.tensor<f32[2 didx, 4, 8], mesh=[0, 1]>) -> !fusion.tensor<f32[r2, 4, 8(2 didx, 4)], mesh=[0, 1]> {
  %y = fusion.reduce sum %x dims [0] : !fusion.tensor<f32[2 didx, 4, 8], mesh=[0, 1]> -> !fusion.tensor<f32[r2, 4, 8(2 didx, 4)], mesh=[0, 1]>
  fusion.return %y : !fusion.tensor<f32[r2, 4, 8(2 didx, 4)], mesh=[0, 1]>
}

// -----

// AllToAll [D(i0), i1] -> [i0, D(i1)] keeping 2 and 3 elements per device: the scattered
// axis is split by a reshape (its device part outermost in memory), then merged back.
// CHECK-LABEL: fusion.func @all_to_all_split(
// CHECK-NEXT:    %0 = fusion.reshape %x : !fusion.tensor<f32[4(2 didx, 2), 6], mesh=[0, 1]> -> !fusion.tensor<f32[4(2 didx, 2), 2, 3], mesh=[0, 1], alloc=[1, 0, 2]>
// CHECK-NEXT:    %1 = fusion.set %0 : !fusion.tensor<f32[4(2 didx, 2), 2, 3], mesh=[0, 1], alloc=[1, 0, 2]> -> !fusion.tensor<f32[4, 2 didx, 3], mesh=[0, 1]>
// CHECK-NEXT:    %y = fusion.reshape %1 : !fusion.tensor<f32[4, 2 didx, 3], mesh=[0, 1]> -> !fusion.tensor<f32[4, 6(2 didx, 3)], mesh=[0, 1]>
// CHECK-NEXT:    fusion.return %y : !fusion.tensor<f32[4, 6(2 didx, 3)], mesh=[0, 1]>
// CHECK-NEXT:  }
// LOWER-LABEL: hir.program @all_to_all_split(
// LOWER-NEXT:    %0 = hir.post_on_stream @all_to_all_split_unit0(%x)
// LOWER-NEXT:    %1 = hir.allocate : !fusion.tensor<f32[4, 2 didx, 3], mesh=[0, 1]>
// LOWER-NEXT:    %[[W:.+]] = hir.all_to_all %0 -> %1 team [0, 1] : !fusion.tensor<f32[4(2 didx, 2), 2, 3], mesh=[0, 1], alloc=[1, 0, 2]> -> !fusion.tensor<f32[4, 2 didx, 3], mesh=[0, 1]>
// LOWER-NEXT:    hir.wait %[[W]]
// LOWER:         %y = hir.post_on_stream @all_to_all_split_unit1(%1)
fusion.func @all_to_all_split(%x: !fusion.tensor<f32[4(2 didx, 2), 6], mesh=[0, 1]>) -> !fusion.tensor<f32[4, 6(2 didx, 3)], mesh=[0, 1]> {
  %y = fusion.set %x : !fusion.tensor<f32[4(2 didx, 2), 6], mesh=[0, 1]> -> !fusion.tensor<f32[4, 6(2 didx, 3)], mesh=[0, 1]>
  fusion.return %y : !fusion.tensor<f32[4, 6(2 didx, 3)], mesh=[0, 1]>
}

// -----

// AllToAll whose gathered axis is whole: already laid out as the collective needs.
// CHECK-LABEL: fusion.func @all_to_all_as_is(
// CHECK-NEXT:    %y = fusion.set %x : !fusion.tensor<f32[2 didx, 8], mesh=[0, 1]> -> !fusion.tensor<f32[2, 8(2 didx, 4)], mesh=[0, 1]>
// CHECK-NEXT:    fusion.return %y : !fusion.tensor<f32[2, 8(2 didx, 4)], mesh=[0, 1]>
// CHECK-NEXT:  }
fusion.func @all_to_all_as_is(%x: !fusion.tensor<f32[2 didx, 8], mesh=[0, 1]>) -> !fusion.tensor<f32[2, 8(2 didx, 4)], mesh=[0, 1]> {
  %y = fusion.set %x : !fusion.tensor<f32[2 didx, 8], mesh=[0, 1]> -> !fusion.tensor<f32[2, 8(2 didx, 4)], mesh=[0, 1]>
  fusion.return %y : !fusion.tensor<f32[2, 8(2 didx, 4)], mesh=[0, 1]>
}

// -----

// With a Stream axis, it stays outermost (the loop slices it away) and the copies
// carry it, so they run in the loop of the communication.
// CHECK-LABEL: fusion.func @allgather_streamed(
// CHECK-NEXT:    %y = fusion.set %x : !fusion.tensor<f32[4, 8, 2 didx], mesh=[0, 1]> -> !fusion.tensor<f32[4 stream, 8, 2], mesh=[0, 1], alloc=[0, 2, 1]>
// CHECK-NEXT:    %y_1 = fusion.set %y : !fusion.tensor<f32[4 stream, 8, 2], mesh=[0, 1], alloc=[0, 2, 1]> -> !fusion.tensor<f32[4 stream, 8, 2], mesh=[0, 1]>
// CHECK-NEXT:    fusion.return %y_1 : !fusion.tensor<f32[4 stream, 8, 2], mesh=[0, 1]>
// CHECK-NEXT:  }
fusion.func @allgather_streamed(%x: !fusion.tensor<f32[4, 8, 2 didx], mesh=[0, 1]>) -> !fusion.tensor<f32[4 stream, 8, 2], mesh=[0, 1]> {
  %y = fusion.set %x : !fusion.tensor<f32[4, 8, 2 didx], mesh=[0, 1]> -> !fusion.tensor<f32[4 stream, 8, 2], mesh=[0, 1]>
  fusion.return %y : !fusion.tensor<f32[4 stream, 8, 2], mesh=[0, 1]>
}

// -----

// The copy before a communication takes the result's Stream axis too.
// CHECK-LABEL: fusion.func @scatter_streamed(
// CHECK-NEXT:    %0 = fusion.set %x : !fusion.tensor<f32[4, 8, 4], mesh=[0]> -> !fusion.tensor<f32[4 stream, 8, 4], mesh=[0], alloc=[0, 2, 1]>
// CHECK-NEXT:    %y = fusion.set %0 : !fusion.tensor<f32[4 stream, 8, 4], mesh=[0], alloc=[0, 2, 1]> -> !fusion.tensor<f32[4 stream, 8, 4(2 didx, 2)], mesh=[0, 1], alloc=[0, 2, 1]>
// CHECK-NEXT:    %y_1 = fusion.set %y : !fusion.tensor<f32[4 stream, 8, 4(2 didx, 2)], mesh=[0, 1], alloc=[0, 2, 1]> -> !fusion.tensor<f32[4 stream, 8, 4(2 didx, 2)], mesh=[0, 1]>
// CHECK-NEXT:    fusion.return %y_1 : !fusion.tensor<f32[4 stream, 8, 4(2 didx, 2)], mesh=[0, 1]>
// CHECK-NEXT:  }
// LOWER-LABEL: hir.program @scatter_streamed(
// LOWER:         scf.for %[[I:.+]] = %c0 to %extent step %c1 {
// LOWER:         scf.for %[[I:.+]] = %c0 to %extent step %c1 {
// LOWER:           %[[COPY:.+]] = fusion.set %x_i into %[[SENT:.+]] : !fusion.tensor<f32[8, 4], mesh=[0]> -> !fusion.tensor<f32[8, 4], mesh=[0], alloc=[1, 0]>
// LOWER-NEXT:      %y_i = hir.alias_select %y[%[[I]]] axis 0
// LOWER-NEXT:      %[[W:.+]] = hir.scatter %[[SENT]] -> %y_i team [0, 1] root 0 : !fusion.tensor<f32[8, 4], mesh=[0], alloc=[1, 0]> -> !fusion.tensor<f32[8, 4(2 didx, 2)], mesh=[0, 1], alloc=[1, 0]>
// LOWER-NEXT:      hir.wait %[[W]]
// LOWER-NEXT:      %y_i_1 = hir.alias_select %y_1[%[[I]]] axis 0
// LOWER-NEXT:      fusion.set %y_i into %y_i_1
fusion.func @scatter_streamed(%x: !fusion.tensor<f32[4, 8, 4], mesh=[0]>) -> !fusion.tensor<f32[4 stream, 8, 4(2 didx, 2)], mesh=[0, 1]> {
  %y = fusion.set %x : !fusion.tensor<f32[4, 8, 4], mesh=[0]> -> !fusion.tensor<f32[4 stream, 8, 4(2 didx, 2)], mesh=[0, 1]>
  fusion.return %y : !fusion.tensor<f32[4 stream, 8, 4(2 didx, 2)], mesh=[0, 1]>
}

// -----

// The split of an all-to-all is computed whole; a set puts the Stream axis back.
// CHECK-LABEL: fusion.func @all_to_all_split_streamed(
// CHECK-NEXT:    %0 = fusion.reshape %x : !fusion.tensor<f32[3, 4(2 didx, 2), 6], mesh=[0, 1]> -> !fusion.tensor<f32[3, 4(2 didx, 2), 2, 3], mesh=[0, 1], alloc=[0, 2, 1, 3]>
// CHECK-NEXT:    %1 = fusion.set %0 : !fusion.tensor<f32[3, 4(2 didx, 2), 2, 3], mesh=[0, 1], alloc=[0, 2, 1, 3]> -> !fusion.tensor<f32[3 stream, 4, 2 didx, 3], mesh=[0, 1]>
// CHECK-NEXT:    %2 = fusion.reshape %1 : !fusion.tensor<f32[3 stream, 4, 2 didx, 3], mesh=[0, 1]> -> !fusion.tensor<f32[3, 4, 6(2 didx, 3)], mesh=[0, 1]>
// CHECK-NEXT:    %y = fusion.set %2 : !fusion.tensor<f32[3, 4, 6(2 didx, 3)], mesh=[0, 1]> -> !fusion.tensor<f32[3 stream, 4, 6(2 didx, 3)], mesh=[0, 1]>
// CHECK-NEXT:    fusion.return %y : !fusion.tensor<f32[3 stream, 4, 6(2 didx, 3)], mesh=[0, 1]>
// CHECK-NEXT:  }
fusion.func @all_to_all_split_streamed(%x: !fusion.tensor<f32[3, 4(2 didx, 2), 6], mesh=[0, 1]>) -> !fusion.tensor<f32[3 stream, 4, 6(2 didx, 3)], mesh=[0, 1]> {
  %y = fusion.set %x : !fusion.tensor<f32[3, 4(2 didx, 2), 6], mesh=[0, 1]> -> !fusion.tensor<f32[3 stream, 4, 6(2 didx, 3)], mesh=[0, 1]>
  fusion.return %y : !fusion.tensor<f32[3 stream, 4, 6(2 didx, 3)], mesh=[0, 1]>
}

// -----

// DIDy on a 2-D mesh: the same rule along the mesh columns.
// CHECK-LABEL: fusion.func @allgather_didy_inner(
// CHECK-NEXT:    %y = fusion.set %x : !fusion.tensor<f32[2 didx, 8, 2 didy], mesh=[[0, 1], [2, 3]]> -> !fusion.tensor<f32[2 didx, 8, 2], mesh=[[0, 1], [2, 3]], alloc=[2, 0, 1]>
// CHECK-NEXT:    %y_1 = fusion.set %y : !fusion.tensor<f32[2 didx, 8, 2], mesh=[[0, 1], [2, 3]], alloc=[2, 0, 1]> -> !fusion.tensor<f32[2 didx, 8, 2], mesh=[[0, 1], [2, 3]]>
// CHECK-NEXT:    fusion.return %y_1 : !fusion.tensor<f32[2 didx, 8, 2], mesh=[[0, 1], [2, 3]]>
// CHECK-NEXT:  }
fusion.func @allgather_didy_inner(%x: !fusion.tensor<f32[2 didx, 8, 2 didy], mesh=[[0, 1], [2, 3]]>) -> !fusion.tensor<f32[2 didx, 8, 2], mesh=[[0, 1], [2, 3]]> {
  %y = fusion.set %x : !fusion.tensor<f32[2 didx, 8, 2 didy], mesh=[[0, 1], [2, 3]]> -> !fusion.tensor<f32[2 didx, 8, 2], mesh=[[0, 1], [2, 3]]>
  fusion.return %y : !fusion.tensor<f32[2 didx, 8, 2], mesh=[[0, 1], [2, 3]]>
}

// -----

// A stream loop over an inner axis would cut strided chunks: both buffers put the Stream
// axis outermost (the copies run in the loop, one contiguous chunk each).
// CHECK-LABEL: fusion.func @stream_axis_inner(
// CHECK-NEXT:    %0 = fusion.set %x : !fusion.tensor<f32[8(4 didx, 2), 8], mesh=[0, 1, 2, 3]> -> !fusion.tensor<f32[8(4 didx, 2), 8 stream], mesh=[0, 1, 2, 3], alloc=[1, 0]>
// CHECK-NEXT:    %y = fusion.set %0 : !fusion.tensor<f32[8(4 didx, 2), 8 stream], mesh=[0, 1, 2, 3], alloc=[1, 0]> -> !fusion.tensor<f32[8, 8 stream], mesh=[0, 1, 2, 3], alloc=[1, 0]>
// CHECK-NEXT:    %y_1 = fusion.set %y : !fusion.tensor<f32[8, 8 stream], mesh=[0, 1, 2, 3], alloc=[1, 0]> -> !fusion.tensor<f32[8, 8 stream], mesh=[0, 1, 2, 3]>
// LOWER-LABEL: hir.program @stream_axis_inner(
// LOWER:         hir.allgather %{{.+}} -> %y_i team [0, 1, 2, 3] : !fusion.tensor<f32[8(4 didx, 2)], mesh=[0, 1, 2, 3]> -> !fusion.tensor<f32[8], mesh=[0, 1, 2, 3]>
fusion.func @stream_axis_inner(%x: !fusion.tensor<f32[8(4 didx, 2), 8], mesh=[0, 1, 2, 3]>) -> !fusion.tensor<f32[8, 8 stream], mesh=[0, 1, 2, 3]> {
  %y = fusion.set %x : !fusion.tensor<f32[8(4 didx, 2), 8], mesh=[0, 1, 2, 3]> -> !fusion.tensor<f32[8, 8 stream], mesh=[0, 1, 2, 3]>
  fusion.return %y : !fusion.tensor<f32[8, 8 stream], mesh=[0, 1, 2, 3]>
}

// -----

// A replicated tensor sharded within its mesh: every device keeps its own part of its
// own buffer (hir.local_shard), whatever the layouts, so no copy is placed.
// CHECK-LABEL: fusion.func @local_shard_needs_no_layout(
// CHECK-NEXT:    %y = fusion.set %x : !fusion.tensor<f32[8, 8], mesh=[0, 1, 2, 3]> -> !fusion.tensor<f32[8, 8(4 didx, 2)], mesh=[0, 1, 2, 3]>
// CHECK-NEXT:    fusion.return %y
// LOWER-LABEL: hir.program @local_shard_needs_no_layout(
// LOWER-NEXT:    %y = hir.allocate : !fusion.tensor<f32[8, 8(4 didx, 2)], mesh=[0, 1, 2, 3]>
// LOWER-NEXT:    hir.local_shard %x -> %y axis 1 team [0, 1, 2, 3] : !fusion.tensor<f32[8, 8], mesh=[0, 1, 2, 3]> -> !fusion.tensor<f32[8, 8(4 didx, 2)], mesh=[0, 1, 2, 3]>
// LOWER-NEXT:    hir.return %y
fusion.func @local_shard_needs_no_layout(%x: !fusion.tensor<f32[8, 8], mesh=[0, 1, 2, 3]>) -> !fusion.tensor<f32[8, 8(4 didx, 2)], mesh=[0, 1, 2, 3]> {
  %y = fusion.set %x : !fusion.tensor<f32[8, 8], mesh=[0, 1, 2, 3]> -> !fusion.tensor<f32[8, 8(4 didx, 2)], mesh=[0, 1, 2, 3]>
  fusion.return %y : !fusion.tensor<f32[8, 8(4 didx, 2)], mesh=[0, 1, 2, 3]>
}

// -----

// A matmul + reduce-scatter whose scattered row blocks lie inside a batch axis (overlap.py's
// layout, [S, D (K), D (row block), m, k], run without a stream loop): the matmul computes in
// the layout the collective needs (row blocks outermost) instead of a copy into it; the
// runtime writes it with one GEMM per row block. Where its result is read twice, the copy stays.
!a = !fusion.tensor<f32[4, 2 didx, 2, 8, 16], mesh=[0, 1]>
!b = !fusion.tensor<f32[b1, 2 didx, b1, 16, 8], mesh=[0, 1]>
!p = !fusion.tensor<f32[4, 2 didx, 2, 8, 8, r16], mesh=[0, 1]>
!c = !fusion.tensor<f32[4, r2, 2 didx, 8, 8], mesh=[0, 1]>
// CHECK-LABEL: fusion.func @matmul_reduce_scatter_rows_inside(
// CHECK-NEXT:    %p = fusion.matmul %a, %b : !fusion.tensor<f32[4, 2 didx, 2, 8, 16], mesh=[0, 1]>, !fusion.tensor<f32[b1, 2 didx, b1, 16, 8], mesh=[0, 1]> -> !fusion.tensor<f32[4, 2 didx, 2, 8, 8, r16], mesh=[0, 1], alloc=[2, 0, 1, 3, 4, 5]>
// CHECK-NEXT:    %c = fusion.reduce sum %p dims [1]
// CHECK-LABEL: fusion.func @read_twice(
// CHECK-NEXT:    %p = fusion.matmul %a, %b : {{.+}} -> !fusion.tensor<f32[4, 2 didx, 2, 8, 8, r16], mesh=[0, 1]>
// CHECK-NEXT:    %{{.+}} = fusion.set %p : {{.+}} -> !fusion.tensor<f32[4, 2 didx, 2, 8, 8], mesh=[0, 1], alloc=[2, 0, 1, 3, 4]>
// LOWER-LABEL: hir.program @matmul_reduce_scatter_rows_inside(
// LOWER:         %p = fusion.matmul
// LOWER-NOT:     fusion.set
// LOWER:         hir.reduce_scatter %p
fusion.func @matmul_reduce_scatter_rows_inside(%a: !a, %b: !b) -> !c {
  %p = fusion.matmul %a, %b : !a, !b -> !p
  %c = fusion.reduce sum %p dims [1] : !p -> !c
  fusion.return %c : !c
}
fusion.func @read_twice(%a: !a, %b: !b) -> (!c, !p) {
  %p = fusion.matmul %a, %b : !a, !b -> !p
  %c = fusion.reduce sum %p dims [1] : !p -> !c
  fusion.return %c, %p : !c, !p
}
