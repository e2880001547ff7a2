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

