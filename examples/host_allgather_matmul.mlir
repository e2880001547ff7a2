// Allgather + matmul overlapped over 2 stream chunks on 2 ranks (nvFuser's
// AllgatherBasedPipelining): while chunk i is being gathered on one worker stream,
// chunk i-1 is multiplied on another. A[s, d, m, k] is sharded along d.
// Run:  hostir-run examples/host_allgather_matmul.mlir --nproc 2 --number-of-streams 2
!a = !fusion.tensor<f32[2 stream, 2 didx, 4, 8], mesh=[0, 1]>
!b = !fusion.tensor<f32[8, 16], mesh=[0, 1]>
!ag = !fusion.tensor<f32[2 stream, 2, 4, 8], mesh=[0, 1]>
!c = !fusion.tensor<f32[2 stream, 2, 4, 16, r8], mesh=[0, 1]>
!a_i = !fusion.tensor<f32[2 didx, 4, 8], mesh=[0, 1]>
!ag_i = !fusion.tensor<f32[2, 4, 8], mesh=[0, 1]>
!c_i = !fusion.tensor<f32[2, 4, 16, r8], mesh=[0, 1]>
hir.program @main(%a: !a, %b: !b) -> !c {
  %gathered = hir.allocate : !ag
  %c = hir.allocate : !c
  %user = hir.get_current_stream
  %n = hir.number_of_streams
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  // Every worker stream first waits for the work the user's stream already queued.
  scf.for %i = %c0 to %c2 step %c1 {
    %k = arith.remsi %i, %n : index
    %s = hir.stream %k
    hir.set_current_stream %s
    hir.synchronize %user
  }
  scf.for %i = %c0 to %c2 step %c1 {
    %k = arith.remsi %i, %n : index
    %s = hir.stream %k
    hir.set_current_stream %s
    %a_i = hir.alias_select %a[%i] axis 0 : !a -> !a_i
    %ag_i = hir.alias_select %gathered[%i] axis 0 : !ag -> !ag_i
    %w = hir.allgather %a_i -> %ag_i team [0, 1] : !a_i -> !ag_i
    hir.wait %w
    %c_i = hir.alias_select %c[%i] axis 0 : !c -> !c_i
    %r = fusion.matmul %ag_i, %b into %c_i : !ag_i, !b -> !c_i
    hir.set_current_stream %user
    hir.synchronize %s
  }
  hir.deallocate %gathered : !ag
  hir.return %c : !c
}
fusion.func @reference(%a: !a, %b: !b) -> !c {
  %g = fusion.set %a : !a -> !ag
  %c = fusion.matmul %g, %b : !ag, !b -> !c
  fusion.return %c : !c
}
