// RUN: hostir-opt %s -p stream-parallel-type --remarks 2>&1 >/dev/null | filecheck %s

// A whole stream axis that cannot be pipelined is not left silent: a located remark says
// the op runs whole. An op that is pipelined gets none.
hir.program @p(%a: !fusion.tensor<f32[4, 8]>) -> (!fusion.tensor<f32[r4 stream, 8]>, !fusion.tensor<f32[4 stream, 8]>) {
  // CHECK: stream_parallel_type_remarks.mlir:[[# @LINE + 1]]:3: remark: stream-parallel-type: 'fusion.reduce' op runs whole: its stream axis cannot be computed one chunk at a time
  %b = fusion.reduce sum %a dims [0] : !fusion.tensor<f32[4, 8]> -> !fusion.tensor<f32[r4 stream, 8]>
  %c = fusion.neg %a : !fusion.tensor<f32[4, 8]> -> !fusion.tensor<f32[4 stream, 8]>
  hir.return %b, %c : !fusion.tensor<f32[r4 stream, 8]>, !fusion.tensor<f32[4 stream, 8]>
}
// CHECK-NOT: remark
