// Allgather + matmul overlapped over 2 stream chunks on 2 ranks (nvFuser's
// AllgatherBasedPipelining): while chunk i is being gathered on one worker stream,
// chunk i-1 is multiplied on another. A[s, d, m, k] is sharded along d. The first loop
// makes every worker stream wait for the user's stream; doing that in a loop of its own
// keeps the main loop's iterations free to overlap.
// Run:  hostir-run examples/host_programs/host_allgather_matmul.mlir --number-of-streams 2

builtin.module {
  hir.program @main(%a: !fusion.tensor<f32[2 stream, 2 didx, 4, 8], mesh=[0, 1]>, %b: !fusion.tensor<f32[8, 16], mesh=[0, 1]>) -> !fusion.tensor<f32[2 stream, 2, 4, 16, r8], mesh=[0, 1]> {
    %gathered = hir.allocate : !fusion.tensor<f32[2 stream, 2, 4, 8], mesh=[0, 1]>
    %c = hir.allocate : !fusion.tensor<f32[2 stream, 2, 4, 16, r8], mesh=[0, 1]>
    %user = hir.get_current_stream
    %n = hir.number_of_streams
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c2 = arith.constant 2 : index
    scf.for %i = %c0 to %c2 step %c1 {
      %k = arith.remsi %i, %n : index
      %s = hir.stream %k
      hir.set_current_stream %s
      hir.synchronize %user
    }
    scf.for %i_1 = %c0 to %c2 step %c1 {
      %k_1 = arith.remsi %i_1, %n : index
      %s_1 = hir.stream %k_1
      hir.set_current_stream %s_1
      %a_i = hir.alias_select %a[%i_1] axis 0 : !fusion.tensor<f32[2 stream, 2 didx, 4, 8], mesh=[0, 1]> -> !fusion.tensor<f32[2 didx, 4, 8], mesh=[0, 1]>
      %ag_i = hir.alias_select %gathered[%i_1] axis 0 : !fusion.tensor<f32[2 stream, 2, 4, 8], mesh=[0, 1]> -> !fusion.tensor<f32[2, 4, 8], mesh=[0, 1]>
      %w = hir.allgather %a_i -> %ag_i team [0, 1] : !fusion.tensor<f32[2 didx, 4, 8], mesh=[0, 1]> -> !fusion.tensor<f32[2, 4, 8], mesh=[0, 1]>
      hir.wait %w
      %c_i = hir.alias_select %c[%i_1] axis 0 : !fusion.tensor<f32[2 stream, 2, 4, 16, r8], mesh=[0, 1]> -> !fusion.tensor<f32[2, 4, 16, r8], mesh=[0, 1]>
      %r = fusion.matmul %ag_i, %b into %c_i : !fusion.tensor<f32[2, 4, 8], mesh=[0, 1]>, !fusion.tensor<f32[8, 16], mesh=[0, 1]> -> !fusion.tensor<f32[2, 4, 16, r8], mesh=[0, 1]>
      hir.set_current_stream %user
      hir.synchronize %s_1
    }
    hir.deallocate %gathered : !fusion.tensor<f32[2 stream, 2, 4, 8], mesh=[0, 1]>
    hir.return %c : !fusion.tensor<f32[2 stream, 2, 4, 16, r8], mesh=[0, 1]>
  }
  fusion.func @reference(%a: !fusion.tensor<f32[2 stream, 2 didx, 4, 8], mesh=[0, 1]>, %b: !fusion.tensor<f32[8, 16], mesh=[0, 1]>) -> !fusion.tensor<f32[2 stream, 2, 4, 16, r8], mesh=[0, 1]> {
    %g = fusion.set %a : !fusion.tensor<f32[2 stream, 2 didx, 4, 8], mesh=[0, 1]> -> !fusion.tensor<f32[2 stream, 2, 4, 8], mesh=[0, 1]>
    %c = fusion.matmul %g, %b : !fusion.tensor<f32[2 stream, 2, 4, 8], mesh=[0, 1]>, !fusion.tensor<f32[8, 16], mesh=[0, 1]> -> !fusion.tensor<f32[2 stream, 2, 4, 16, r8], mesh=[0, 1]>
    fusion.return %c : !fusion.tensor<f32[2 stream, 2, 4, 16, r8], mesh=[0, 1]>
  }
}
