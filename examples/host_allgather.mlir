// An allgather of a row-sharded matrix on 2 ranks, then a local computation.
// Run:  hostir-run examples/host_allgather.mlir --nproc 2
// @reference is the fusion this host program implements; hostir-run checks against it.
!x = !fusion.tensor<f32[2 didx, 8], mesh=[0, 1]>
!g = !fusion.tensor<f32[2, 8], mesh=[0, 1]>
hir.program @main(%x: !x) -> !g {
  %gathered = hir.allocate : !g
  %w = hir.allgather %x -> %gathered team [0, 1] : !x -> !g
  hir.wait %w
  %two = arith.constant 2.0 : f32
  %out = hir.allocate : !g
  %y = fusion.mul %gathered, %two into %out : !g, f32 -> !g
  hir.deallocate %gathered : !g
  hir.return %y : !g
}
fusion.func @reference(%x: !x) -> !g {
  %g = fusion.set %x : !x -> !g
  %two = arith.constant 2.0 : f32
  %y = fusion.mul %g, %two : !g, f32 -> !g
  fusion.return %y : !g
}
