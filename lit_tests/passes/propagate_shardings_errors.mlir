// RUN: hostir-opt %s --split-input-file --verify-diagnostics -p propagate-shardings | filecheck %s

// CHECK: propagate_shardings_errors.mlir:[[# @LINE + 2]]:3: error: 'fusion.relu' op inner split for device or stream parallelization is not supported
fusion.func @inner_split(%x: !fusion.tensor<f32[8(2, 4 didx)], mesh=[0, 1, 2, 3]>) -> !fusion.tensor<f32[8]> {
  %y = fusion.relu %x : !fusion.tensor<f32[8(2, 4 didx)], mesh=[0, 1, 2, 3]> -> !fusion.tensor<f32[8]>
  fusion.return %y : !fusion.tensor<f32[8]>
}

// -----

// CHECK: error: 'fusion.reshape' op split factor 2 does not divide extent 3 of axis 0
fusion.func @not_divisible(%x: !fusion.tensor<f32[6(2 didx, 3), 4], mesh=[0, 1]>) -> !fusion.tensor<f32[3, 8]> {
  %y = fusion.reshape %x : !fusion.tensor<f32[6(2 didx, 3), 4], mesh=[0, 1]> -> !fusion.tensor<f32[3, 8]>
  fusion.return %y : !fusion.tensor<f32[3, 8]>
}

// -----

// Backward too: the output's split factor 4 does not divide the intermediate's axis.
// CHECK: error: 'fusion.reshape' op split factor 4 does not divide extent 2 of axis 0
fusion.func @not_divisible_backward(%x: !fusion.tensor<f32[2, 8], mesh=[0, 1, 2, 3]>) -> !fusion.tensor<f32[16(4 didx, 4)], mesh=[0, 1, 2, 3]> {
  %y = fusion.relu %x : !fusion.tensor<f32[2, 8], mesh=[0, 1, 2, 3]> -> !fusion.tensor<f32[2, 8]>
  %z = fusion.reshape %y : !fusion.tensor<f32[2, 8]> -> !fusion.tensor<f32[16(4 didx, 4)], mesh=[0, 1, 2, 3]>
  fusion.return %z : !fusion.tensor<f32[16(4 didx, 4)], mesh=[0, 1, 2, 3]>
}
