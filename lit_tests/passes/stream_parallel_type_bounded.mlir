// RUN: hostir-opt %s --split-input-file -p 'stream-parallel-type{bounded-intermediates=true}' | filecheck %s

// bounded-intermediates: %h is neither returned nor read after the loop, so it gets no
// full-size buffer: each iteration allocates its chunk and frees it at the end of the
// iteration. %y is returned and keeps its full buffer.
hir.program @mlp(%x: !fusion.tensor<f32[8, 16]>, %w: !fusion.tensor<f32[16, 32]>) -> !fusion.tensor<f32[8 stream, r32]> {
  %h = fusion.matmul %x, %w : !fusion.tensor<f32[8, 16]>, !fusion.tensor<f32[16, 32]> -> !fusion.tensor<f32[8 stream, 32, r16]>
  %y = fusion.reduce sum %h dims [1] : !fusion.tensor<f32[8 stream, 32, r16]> -> !fusion.tensor<f32[8 stream, r32]>
  hir.return %y : !fusion.tensor<f32[8 stream, r32]>
}
// CHECK-LABEL: hir.program @mlp
// CHECK:         %extent = arith.constant 8 : index
// CHECK-NEXT:    %y = hir.allocate : !fusion.tensor<f32[8 stream, r32]>
// CHECK-NEXT:    %user_stream = hir.get_current_stream
// CHECK-NEXT:    scf.for
// CHECK:         scf.for
// CHECK:           hir.set_current_stream %worker
// CHECK-NEXT:      %x_i = hir.alias_select %x
// CHECK-NEXT:      %h_i = hir.allocate : !fusion.tensor<f32[32, r16]>
// CHECK-NEXT:      fusion.matmul %x_i, %w into %h_i
// CHECK-NEXT:      %y_i = hir.alias_select %y
// CHECK-NEXT:      fusion.reduce sum %h_i dims [0] into %y_i
// CHECK-NEXT:      hir.deallocate %h_i : !fusion.tensor<f32[32, r16]>
// CHECK-NEXT:      hir.set_current_stream %user_stream
// CHECK-NEXT:      hir.synchronize %worker
// CHECK-NEXT:    }
// CHECK-NEXT:    hir.return %y

// -----

// An intermediate read after its loop (here by a non-stream op) keeps its full buffer.
hir.program @read_after(%a: !fusion.tensor<f32[4, 8]>) -> (!fusion.tensor<f32[4 stream, 8]>, !fusion.tensor<f32[4, 8]>) {
  %b = fusion.neg %a : !fusion.tensor<f32[4, 8]> -> !fusion.tensor<f32[4 stream, 8]>
  %c = fusion.set %b : !fusion.tensor<f32[4 stream, 8]> -> !fusion.tensor<f32[4 stream, 8]>
  %d = fusion.add %b, %b : !fusion.tensor<f32[4 stream, 8]>, !fusion.tensor<f32[4 stream, 8]> -> !fusion.tensor<f32[4, 8]>
  hir.return %c, %d : !fusion.tensor<f32[4 stream, 8]>, !fusion.tensor<f32[4, 8]>
}
// CHECK-LABEL: hir.program @read_after
// CHECK:         %b = hir.allocate : !fusion.tensor<f32[4 stream, 8]>
// CHECK-NEXT:    %c = hir.allocate : !fusion.tensor<f32[4 stream, 8]>
// CHECK-NOT:     hir.deallocate
// CHECK:         fusion.add %b, %b

// -----

// A loop-local chunk of dynamic extent is allocated with its extent, read from the tensor
// before the loop that has it (without one, the runtime refuses the allocation).
hir.program @dynamic_rows(%x: !fusion.tensor<f32[4, ?]>) -> !fusion.tensor<f32[4 stream, ?]> {
  %h = fusion.neg %x : !fusion.tensor<f32[4, ?]> -> !fusion.tensor<f32[4 stream, ?]>
  %y = fusion.abs %h : !fusion.tensor<f32[4 stream, ?]> -> !fusion.tensor<f32[4 stream, ?]>
  hir.return %y : !fusion.tensor<f32[4 stream, ?]>
}
// CHECK-LABEL: hir.program @dynamic_rows
// CHECK:         scf.for
// CHECK:         scf.for
// CHECK:           %x_i = hir.alias_select %x
// CHECK-NEXT:      %[[E:.+]] = hir.extent %x axis 1 : !fusion.tensor<f32[4, ?]>
// CHECK-NEXT:      %h_i = hir.allocate(%[[E]]) : !fusion.tensor<f32[?]>
// CHECK-NEXT:      fusion.neg %x_i into %h_i
// CHECK:           hir.deallocate %h_i

// -----

// A chunk that is one block of a dynamic axis has the axis's extent over the blocks.
hir.program @dynamic_blocks(%x: !fusion.tensor<f32[?, 8]>) -> !fusion.tensor<f32[?(2 stream, ?), 8]> {
  %h = fusion.neg %x : !fusion.tensor<f32[?, 8]> -> !fusion.tensor<f32[?(2 stream, ?), 8]>
  %y = fusion.abs %h : !fusion.tensor<f32[?(2 stream, ?), 8]> -> !fusion.tensor<f32[?(2 stream, ?), 8]>
  hir.return %y : !fusion.tensor<f32[?(2 stream, ?), 8]>
}
// CHECK-LABEL: hir.program @dynamic_blocks
// CHECK:         scf.for
// CHECK:         scf.for
// CHECK:           %x_i = hir.alias_chunk %x[%{{.+}}] axis 0 parts 2
// CHECK-NEXT:      %[[E:.+]] = hir.extent %x axis 0 : !fusion.tensor<f32[?, 8]>
// CHECK-NEXT:      %parts = arith.constant 2 : index
// CHECK-NEXT:      %block = arith.divui %[[E]], %parts : index
// CHECK-NEXT:      %h_i = hir.allocate(%block) : !fusion.tensor<f32[?, 8]>
// CHECK-NEXT:      fusion.neg %x_i into %h_i
