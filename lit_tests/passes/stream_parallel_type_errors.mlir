// RUN: hostir-opt %s --split-input-file --verify-diagnostics -p stream-parallel-type | filecheck %s

// InputsAreWhole: a stream axis of an input is sliced, but no input holds one chunk.
// CHECK: stream_parallel_type_errors.mlir:[[# @LINE + 1]]:1: error: 'hir.program' op input 0 of type !fusion.tensor<f32[4 stream, 8], alloc=[0 stream, 1]> is allocated one stream chunk at a time; the caller passes whole tensors
hir.program @stream_input(%a: !fusion.tensor<f32[4 stream, 8], alloc=[0 stream, 1]>) -> !fusion.tensor<f32[4, 8]> {
  %b = fusion.set %a : !fusion.tensor<f32[4 stream, 8], alloc=[0 stream, 1]> -> !fusion.tensor<f32[4, 8]>
  hir.return %b : !fusion.tensor<f32[4, 8]>
}

// -----

// A fusion that lower-to-host has not turned into a program: its stream axes would stay
// unlowered.
// CHECK: stream_parallel_type_errors.mlir:[[# @LINE + 1]]:1: error: 'fusion.func' op has stream axes but the module holds no hir.program; run lower-to-host first
fusion.func @not_lowered(%a: !fusion.tensor<f32[4, 8]>) -> !fusion.tensor<f32[4 stream, 8]> {
  %b = fusion.set %a : !fusion.tensor<f32[4, 8]> -> !fusion.tensor<f32[4 stream, 8]>
  fusion.return %b : !fusion.tensor<f32[4 stream, 8]>
}
