// RUN: hostir-opt %s --split-input-file --verify-diagnostics -p finalize-multidevice-domains | filecheck %s

// CHECK: finalize_multidevice_domains_errors.mlir:[[# @LINE + 2]]:3: error: 'fusion.relu' op Cannot have some tensors with a device mesh and some without (its result has none)
fusion.func @some_meshes(%x: !fusion.tensor<f32[4], mesh=[0, 1]>) -> !fusion.tensor<f32[4]> {
  %y = fusion.relu %x : !fusion.tensor<f32[4], mesh=[0, 1]> -> !fusion.tensor<f32[4]>
  fusion.return %y : !fusion.tensor<f32[4]>
}

// -----

// CHECK: finalize_multidevice_domains_errors.mlir:[[# @LINE + 1]]:1: error: 'fusion.func' op Cannot have some tensors with a device mesh and some without (argument 1 has none)
fusion.func @argument_without_mesh(%x: !fusion.tensor<f32[4], mesh=[0, 1]>, %w: !fusion.tensor<f32[4]>) -> !fusion.tensor<f32[4], mesh=[0, 1]> {
  fusion.return %x : !fusion.tensor<f32[4], mesh=[0, 1]>
}

// -----

// CHECK: finalize_multidevice_domains_errors.mlir:[[# @LINE + 2]]:3: error: 'fusion.set' op Resharding expression must have contiguous inputs and outputs: a buffer is allocated in order [1, 0]
fusion.func @non_contiguous(%x: !fusion.tensor<f32[2 didx, 8], mesh=[0, 1], alloc=[1, 0]>) -> !fusion.tensor<f32[2, 8], mesh=[0, 1]> {
  %y = fusion.set %x : !fusion.tensor<f32[2 didx, 8], mesh=[0, 1], alloc=[1, 0]> -> !fusion.tensor<f32[2, 8], mesh=[0, 1]>
  fusion.return %y : !fusion.tensor<f32[2, 8], mesh=[0, 1]>
}
