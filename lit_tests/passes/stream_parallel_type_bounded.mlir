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
