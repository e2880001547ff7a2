// An allgather of a row-sharded matrix on 2 ranks, then a local computation.
// Run:  hostir-run examples/host_programs/host_allgather.mlir   (on the 2 ranks its mesh names)
// @reference is the fusion this host program implements; hostir-run checks against it.

builtin.module {
  hir.program @main(%x: !fusion.tensor<f32[2 didx, 8], mesh=[0, 1]>) -> !fusion.tensor<f32[2, 8], mesh=[0, 1]> {
    %gathered = hir.allocate : !fusion.tensor<f32[2, 8], mesh=[0, 1]>
    %w = hir.allgather %x -> %gathered team [0, 1] : !fusion.tensor<f32[2 didx, 8], mesh=[0, 1]> -> !fusion.tensor<f32[2, 8], mesh=[0, 1]>
    hir.wait %w
    %two = arith.constant 2.000000e+00 : f32
    %out = hir.allocate : !fusion.tensor<f32[2, 8], mesh=[0, 1]>
    %y = fusion.mul %gathered, %two into %out : !fusion.tensor<f32[2, 8], mesh=[0, 1]>, f32 -> !fusion.tensor<f32[2, 8], mesh=[0, 1]>
    hir.deallocate %gathered : !fusion.tensor<f32[2, 8], mesh=[0, 1]>
    hir.return %y : !fusion.tensor<f32[2, 8], mesh=[0, 1]>
  }
  fusion.func @reference(%x: !fusion.tensor<f32[2 didx, 8], mesh=[0, 1]>) -> !fusion.tensor<f32[2, 8], mesh=[0, 1]> {
    %g = fusion.set %x : !fusion.tensor<f32[2 didx, 8], mesh=[0, 1]> -> !fusion.tensor<f32[2, 8], mesh=[0, 1]>
    %two = arith.constant 2.000000e+00 : f32
    %y = fusion.mul %g, %two : !fusion.tensor<f32[2, 8], mesh=[0, 1]>, f32 -> !fusion.tensor<f32[2, 8], mesh=[0, 1]>
    fusion.return %y : !fusion.tensor<f32[2, 8], mesh=[0, 1]>
  }
}
