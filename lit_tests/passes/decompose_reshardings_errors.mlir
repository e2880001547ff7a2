// RUN: hostir-opt %s --split-input-file --verify-diagnostics -p decompose-reshardings | filecheck %s

// K sharded in one operand: the other takes its split, but not an inner device piece of it.
// CHECK: decompose_reshardings_errors.mlir:[[# @LINE + 2]]:3: error: 'fusion.matmul' op inner split for device or stream parallelization is not supported
fusion.func @k_with_an_inner_device_piece(%a: !fusion.tensor<f32[4, 8(2 didx, 2 didy, 2)], mesh=[[0, 1], [2, 3]]>, %b: !fusion.tensor<f32[8, 16], mesh=[[0, 1], [2, 3]]>) -> !fusion.tensor<f32[4, 16, r8], mesh=[[0, 1], [2, 3]]> {
  %c = fusion.matmul %a, %b : !fusion.tensor<f32[4, 8(2 didx, 2 didy, 2)], mesh=[[0, 1], [2, 3]]>, !fusion.tensor<f32[8, 16], mesh=[[0, 1], [2, 3]]> -> !fusion.tensor<f32[4, 16, r8], mesh=[[0, 1], [2, 3]]>
  fusion.return %c : !fusion.tensor<f32[4, 16, r8], mesh=[[0, 1], [2, 3]]>
}

// -----

// CHECK: error: 'fusion.reduce' op inner split for device or stream parallelization is not supported
fusion.func @inner_split(%x: !fusion.tensor<f32[8(2, 4 didx)], mesh=[0, 1, 2, 3]>) -> !fusion.tensor<f32[r8], mesh=[0, 1, 2, 3]> {
  %c = fusion.reduce sum %x dims [0] : !fusion.tensor<f32[8(2, 4 didx)], mesh=[0, 1, 2, 3]> -> !fusion.tensor<f32[r8], mesh=[0, 1, 2, 3]>
  fusion.return %c : !fusion.tensor<f32[r8], mesh=[0, 1, 2, 3]>
}

