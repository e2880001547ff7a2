// RUN: hostir-opt %s -p lower-to-host,stream-parallel-type | filecheck %s

// A stream axis on an input (nvFuser's row-parallel overlap, test_overlap.py): the caller
// passes the input whole, and each iteration of the loop reads its chunk of it.

// CHECK-LABEL: hir.program @row_parallel(%x: !fusion.tensor<f32[3 stream, 8]>, %w: !fusion.tensor<f32[2, 8]>)
// CHECK:       scf.for %i_1 = %c0 to %extent step %c1 {
// CHECK:         %x_i = hir.alias_select %x[%i_1] axis 0 : !fusion.tensor<f32[3 stream, 8]> -> !fusion.tensor<f32[8]>
// CHECK-NEXT:    %y_i = hir.alias_select %y[%i_1] axis 0 : !fusion.tensor<f32[3 stream, 2, r8]> -> !fusion.tensor<f32[2, r8]>
// CHECK-NEXT:    %0 = fusion.linear %x_i, %w into %y_i : !fusion.tensor<f32[8]>, !fusion.tensor<f32[2, 8]> -> !fusion.tensor<f32[2, r8]>
fusion.func @row_parallel(%x: !fusion.tensor<f32[3 stream, 8]>, %w: !fusion.tensor<f32[2, 8]>) -> !fusion.tensor<f32[3 stream, 2, r8]> {
  %y = fusion.linear %x, %w : !fusion.tensor<f32[3 stream, 8]>, !fusion.tensor<f32[2, 8]> -> !fusion.tensor<f32[3 stream, 2, r8]>
  fusion.return %y : !fusion.tensor<f32[3 stream, 2, r8]>
}
