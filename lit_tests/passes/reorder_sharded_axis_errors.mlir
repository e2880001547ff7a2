// RUN: hostir-opt %s --split-input-file --verify-diagnostics -p reorder-sharded-axis | filecheck %s
// RUN: hostir-opt %s --split-input-file --verify-diagnostics -p hostir-lower | filecheck %s --check-prefix=LOWER

// A reduce-scatter into a result whose Stream is the inner piece of its DIDx split: the
// copy that would lay the scattered chunks out for the stream loop cannot carry that Stream.
// CHECK: reorder_sharded_axis_errors.mlir:[[# @LINE + 2]]:3: error: 'fusion.reduce' op inner split for device or stream parallelization is not supported
fusion.func @stream_on_an_inner_split(%x: !fusion.tensor<f32[4, 2 didx], mesh=[0, 1]>) -> !fusion.tensor<f32[4(2 didx, 2 stream), r2], mesh=[0, 1]> {
  %y = fusion.reduce sum %x dims [1] : !fusion.tensor<f32[4, 2 didx], mesh=[0, 1]> -> !fusion.tensor<f32[4(2 didx, 2 stream), r2], mesh=[0, 1]>
  fusion.return %y : !fusion.tensor<f32[4(2 didx, 2 stream), r2], mesh=[0, 1]>
}

// -----

// An all-to-all into a result that streams the axis it scatters (a Stream piece beside its
// DIDx piece): no allocation order lays out both; refused instead of naming the axis twice.
// CHECK: reorder_sharded_axis_errors.mlir:[[# @LINE + 2]]:3: error: 'fusion.set' op inner split for device or stream parallelization is not supported
fusion.func @stream_on_the_scattered_axis(%x: !fusion.tensor<f32[4(2 didx, 2), 4], mesh=[0, 1]>) -> !fusion.tensor<f32[4, 4(2 didx, 2 stream)], mesh=[0, 1]> {
  %y = fusion.set %x : !fusion.tensor<f32[4(2 didx, 2), 4], mesh=[0, 1]> -> !fusion.tensor<f32[4, 4(2 didx, 2 stream)], mesh=[0, 1]>
  fusion.return %y : !fusion.tensor<f32[4, 4(2 didx, 2 stream)], mesh=[0, 1]>
}

// -----

// A value sharded on the inner piece of a split, moving to the outer piece (issue 25, a
// crash: the order built named an axis twice). No allocation order lays out inner-split
// shards: the pass leaves the set, and convert-op-to-communication refuses it, located.
// CHECK-LABEL: fusion.func @inner_piece_to_outer_piece(
// CHECK-NEXT:    %y = fusion.set %x : !fusion.tensor<f32[4, 4(2, 2 didx)], mesh=[0, 1]> -> !fusion.tensor<f32[4, 4(2 didx, 2)], mesh=[0, 1]>
// LOWER: reorder_sharded_axis_errors.mlir:[[# @LINE + 2]]:3: error: 'fusion.set' op DIDx on an inner split (axis 1 of !fusion.tensor<f32[4, 4(2, 2 didx)], mesh=[0, 1]>) is not lowerable; split the axis outer
fusion.func @inner_piece_to_outer_piece(%x: !fusion.tensor<f32[4, 4(2, 2 didx)], mesh=[0, 1]>) -> !fusion.tensor<f32[4, 4(2 didx, 2)], mesh=[0, 1]> {
  %y = fusion.set %x : !fusion.tensor<f32[4, 4(2, 2 didx)], mesh=[0, 1]> -> !fusion.tensor<f32[4, 4(2 didx, 2)], mesh=[0, 1]>
  fusion.return %y : !fusion.tensor<f32[4, 4(2 didx, 2)], mesh=[0, 1]>
}
