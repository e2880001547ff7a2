// RUN: hostir-opt %s --split-input-file -p 'hostir-lower{transport=nccl}' | filecheck %s
// RUN: not hostir-opt %s -p 'hostir-lower{transport=copy-engine}' 2>&1 | filecheck %s --check-prefix=CE

// nvFuser's spelling of chunking: `outer_split(0, 3)` then Stream on the outer piece
// (test_overlap.py::test_row_parallel_linear_forward). One loop of 3 iterations; each
// takes a contiguous block of the rows (`hir.alias_chunk`, which keeps the axis),
// multiplies it into its block of the partial sums and all-reduces that block, as
// nvFuser's host program does.
// CHECK-LABEL: hir.program @row_parallel(
// CHECK:         %extent = arith.constant 3 : index
// CHECK:         scf.for %i_1 = %c0 to %extent step %c1 {
// CHECK:           %x_i = hir.alias_chunk %x[%i_1] axis 0 parts 3 : !fusion.tensor<bf16[?(3 stream, ?), 8(2 didx, 4)], mesh=[0, 1]> -> !fusion.tensor<bf16[?, 8(2 didx, 4)], mesh=[0, 1]>
// CHECK-NEXT:      %[[X:.+]] = hir.post_on_stream @row_parallel_unit1(%x_i) : (!fusion.tensor<bf16[?, 8(2 didx, 4)], mesh=[0, 1]>) -> !fusion.tensor<bf16[2 didx, ?, 4], mesh=[0, 1]>
// CHECK-NEXT:      %[[P:.+]] = hir.alias_chunk %{{.+}}[%i_1] axis 1 parts 3 : !fusion.tensor<bf16[2 didx, ?(3 stream, ?), 2, r4], mesh=[0, 1]> -> !fusion.tensor<bf16[2 didx, ?, 2, r4], mesh=[0, 1]>
// CHECK-NEXT:      %{{.+}} = fusion.matmul %[[X]], %{{.+}} into %[[P]] :
// CHECK:           %y_i = hir.alias_chunk %y[%i_1] axis 1 parts 3 : !fusion.tensor<bf16[r2, ?(3 stream, ?), 2], mesh=[0, 1]> -> !fusion.tensor<bf16[r2, ?, 2], mesh=[0, 1]>
// CHECK-NEXT:      %w_1 = hir.allreduce %[[P]] -> %y_i team [0, 1] op sum :
// CHECK-NEXT:      hir.wait %w_1
// CHECK:         }
// CHECK-NEXT:    hir.deallocate
// CHECK-NOT:     fusion.matmul
// CHECK:         hir.return %y : !fusion.tensor<bf16[r2, ?(3 stream, ?), 2], mesh=[0, 1]>
// CE: stream_split_axis.mlir:{{[0-9]+}}:3: error: 'fusion.reduce' op cannot communicate on the copy engines: its input's shape must be static
// CHECK:       fusion.func @row_parallel_unit1(%x: !fusion.tensor<bf16[?, 8(2 didx, 4)], mesh=[0, 1]>)
fusion.func @row_parallel(%x: !fusion.tensor<bf16[?(3 stream, ?), 8(2 didx, 4)], mesh=[0, 1]>, %w: !fusion.tensor<bf16[2, 8(2 didx, 4)], mesh=[0, 1]>) -> !fusion.tensor<bf16[?(3 stream, ?), 2, r8], mesh=[0, 1]> {
  %y = fusion.linear %x, %w : !fusion.tensor<bf16[?(3 stream, ?), 8(2 didx, 4)], mesh=[0, 1]>, !fusion.tensor<bf16[2, 8(2 didx, 4)], mesh=[0, 1]> -> !fusion.tensor<bf16[?(3 stream, ?), 2, r8], mesh=[0, 1]>
  fusion.return %y : !fusion.tensor<bf16[?(3 stream, ?), 2, r8], mesh=[0, 1]>
}

