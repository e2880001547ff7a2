// RUN: hostir-opt %s --split-input-file --verify-diagnostics -p 'specialize-extents{extents=6}' | filecheck %s
// RUN: hostir-opt %s --split-input-file --verify-diagnostics -p 'specialize-extents{extents=-4}' | filecheck %s --check-prefix=NEGATIVE

// NEGATIVE: specialize_extents_errors.mlir:[[# @LINE + 10]]:1: error: 'fusion.func' op specialize-extents: extents are at least 0, got [-4]

// CHECK: specialize_extents_errors.mlir:[[# @LINE + 1]]:1: error: 'fusion.func' op specialize-extents: the arguments have 0 dynamic extent(s), 1 given
fusion.func @count(%x: !fusion.tensor<f32[8(2 didx, 4)], mesh=[0, 1]>) -> !fusion.tensor<f32[8(2 didx, 4)], mesh=[0, 1]> {
  fusion.return %x : !fusion.tensor<f32[8(2 didx, 4)], mesh=[0, 1]>
}

// -----

// CHECK: specialize_extents_errors.mlir:[[# @LINE + 1]]:1: error: 'fusion.func' op specialize-extents: argument 0 (!fusion.tensor<f32[?(4 didx, ?)], mesh=[0, 1, 2, 3]>) cannot take extents [6]: a split does not divide one
fusion.func @argument_split(%x: !fusion.tensor<f32[?(4 didx, ?)], mesh=[0, 1, 2, 3]>) -> !fusion.tensor<f32[?(4 didx, ?)], mesh=[0, 1, 2, 3]> {
  fusion.return %x : !fusion.tensor<f32[?(4 didx, ?)], mesh=[0, 1, 2, 3]>
}

// -----

fusion.func @result_split(%x: !fusion.tensor<f32[?], mesh=[0, 1, 2, 3]>) -> !fusion.tensor<f32[?(4 didx, ?)], mesh=[0, 1, 2, 3]> {
  // CHECK: specialize_extents_errors.mlir:[[# @LINE + 1]]:3: error: 'fusion.set' op specialize-extents: its result (!fusion.tensor<f32[?(4 didx, ?)], mesh=[0, 1, 2, 3]>) cannot take extents [6]: a split does not divide one
  %y = fusion.set %x : !fusion.tensor<f32[?], mesh=[0, 1, 2, 3]> -> !fusion.tensor<f32[?(4 didx, ?)], mesh=[0, 1, 2, 3]>
  fusion.return %y : !fusion.tensor<f32[?(4 didx, ?)], mesh=[0, 1, 2, 3]>
}

// -----

// Extents the dynamic types allowed that no run can have: an add of 6 and 4 elements.
fusion.func @operands_disagree(%x: !fusion.tensor<f32[?]>, %y: !fusion.tensor<f32[4]>) -> !fusion.tensor<f32[4]> {
  // CHECK: specialize_extents_errors.mlir:[[# @LINE + 1]]:3: error: 'fusion.add' op specialize-extents: at extents [6], fusion.add axis 0: extents 6 and 4 are not broadcast-compatible
  %z = fusion.add %x, %y : !fusion.tensor<f32[?]>, !fusion.tensor<f32[4]> -> !fusion.tensor<f32[4]>
  fusion.return %z : !fusion.tensor<f32[4]>
}
