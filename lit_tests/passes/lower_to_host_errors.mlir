// RUN: hostir-opt %s --split-input-file --verify-diagnostics -p lower-to-host | filecheck %s

// CHECK: error: 'builtin.module' op holds neither a fusion.func to lower nor a hir.program
builtin.module {
}

// -----

// A fusion holds fusion compute ops and scalars only.
// CHECK: lower_to_host_errors.mlir:[[# @LINE + 5]]:3: error: 'scf.for' op cannot be lowered to a host program: a fusion may only hold fusion compute ops and scalar ops
fusion.func @loop(%x: !fusion.tensor<f32[4]>) -> !fusion.tensor<f32[4]> {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  scf.for %i = %c0 to %c4 step %c1 {
  }
  fusion.return %x : !fusion.tensor<f32[4]>
}

// -----

// Inputs are the caller's whole buffers: one may have a stream axis, not hold one chunk.
// CHECK: lower_to_host_errors.mlir:[[# @LINE + 1]]:1: error: 'fusion.func' op input 0 (%a) is allocated one stream chunk at a time; the caller passes whole tensors
fusion.func @stream_input(%a: !fusion.tensor<f32[4 stream, 8], alloc=[0 stream, 1]>) -> !fusion.tensor<f32[4 stream, 8]> {
  %b = fusion.neg %a : !fusion.tensor<f32[4 stream, 8], alloc=[0 stream, 1]> -> !fusion.tensor<f32[4 stream, 8]>
  fusion.return %b : !fusion.tensor<f32[4 stream, 8]>
}
