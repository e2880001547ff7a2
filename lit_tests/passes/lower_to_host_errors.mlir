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
