// RUN: hostir-opt %s --split-input-file --verify-diagnostics -p stream-parallel-type | filecheck %s

// InputsAreNotStreamParallelized
// CHECK: stream_parallel_type_errors.mlir:[[# @LINE + 1]]:1: error: 'hir.program' op expected no stream axis in the program inputs, but input 0 has type !fusion.tensor<f32[4 stream, 8]>
hir.program @stream_input(%a: !fusion.tensor<f32[4 stream, 8]>) -> !fusion.tensor<f32[4, 8]> {
  %b = fusion.set %a : !fusion.tensor<f32[4 stream, 8]> -> !fusion.tensor<f32[4, 8]>
  hir.return %b : !fusion.tensor<f32[4, 8]>
}
