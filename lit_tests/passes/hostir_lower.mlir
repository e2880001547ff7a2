// RUN: hostir-opt %s --split-input-file --verify-diagnostics -p 'hostir-lower{transport=nccl}' | filecheck %s
// RUN: hostir-opt %s --split-input-file --verify-diagnostics -p 'hostir-lower{transport=nccl}' --disable-pass insert-deallocations --print-ir-after lower-to-host 2>&1 | filecheck %s --check-prefix=OPTS

// The whole pipeline on user fusions. An add that reshards: decompose-reshardings puts
// a set before it, which becomes an allgather; relu + exp run as one kernel unit.
// CHECK-LABEL: hir.program @allgather_add(
// CHECK-NEXT:    %e = hir.post_on_stream @allgather_add_unit0(%x)
// CHECK-NEXT:    %[[G:.+]] = hir.allocate : !fusion.tensor<f32[4, 8], mesh=[0, 1]>
// CHECK-NEXT:    %[[W:.+]] = hir.allgather %e -> %[[G]] team [0, 1] : !fusion.tensor<f32[4(2 didx, 2), 8], mesh=[0, 1]> -> !fusion.tensor<f32[4, 8], mesh=[0, 1]>
// CHECK-NEXT:    hir.wait %[[W]]
// CHECK-NEXT:    hir.deallocate %e
// CHECK-NEXT:    %s = fusion.add %[[G]], %[[G]]
// CHECK-NEXT:    hir.deallocate %[[G]]
// CHECK-NEXT:    hir.return %s
// CHECK:       fusion.func @allgather_add_unit0(
// CHECK-NEXT:    fusion.relu
// CHECK-NEXT:    fusion.exp
// CHECK-NEXT:    fusion.return

// The options reach the members of the pipeline: IR printed after lower-to-host, where
// the set is still a set, and no deallocation at the end.
// OPTS:       IR Dump After lower-to-host
// OPTS:       hir.program @allgather_add(
// OPTS:         fusion.set
// OPTS:       hir.program @allgather_add(
// OPTS-NOT:     hir.deallocate
// OPTS:         hir.return
fusion.func @allgather_add(%x: !fusion.tensor<f32[4(2 didx, 2), 8], mesh=[0, 1]>) -> !fusion.tensor<f32[4, 8], mesh=[0, 1]> {
  %r = fusion.relu %x : !fusion.tensor<f32[4(2 didx, 2), 8], mesh=[0, 1]> -> !fusion.tensor<f32[4, 8]>
  %e = fusion.exp %r : !fusion.tensor<f32[4, 8]> -> !fusion.tensor<f32[4, 8]>
  %s = fusion.add %e, %e : !fusion.tensor<f32[4, 8]>, !fusion.tensor<f32[4, 8]> -> !fusion.tensor<f32[4, 8], mesh=[0, 1]>
  fusion.return %s : !fusion.tensor<f32[4, 8], mesh=[0, 1]>
}

// -----

// A matmul contracting a K sharded over two devices: a local partial matmul, then an
// allreduce of the partial sums, in place: the matmul writes them into the output.
// CHECK-LABEL: hir.program @k_sharded_matmul(
// CHECK:         %c = hir.allocate
// CHECK-NEXT:    %[[V:.+]] = hir.alias_as %c
// CHECK:         %[[P:.+]] = fusion.matmul {{.*}} into %[[V]]
// CHECK-SAME:      -> !fusion.tensor<f32[2 didx, 4, 6, r4], mesh=[0, 1]>
// CHECK:         %[[W:.+]] = hir.allreduce %[[P]] -> %c team [0, 1] op sum
// CHECK-NEXT:    hir.wait %[[W]]
// CHECK-NEXT:    hir.return %c
fusion.func @k_sharded_matmul(%x: !fusion.tensor<f32[4, 8(2 didx, 4)], mesh=[0, 1]>, %w: !fusion.tensor<f32[8(2 didx, 4), 6], mesh=[0, 1]>) -> !fusion.tensor<f32[4, 6, r8]> {
  %c = fusion.matmul %x, %w : !fusion.tensor<f32[4, 8(2 didx, 4)], mesh=[0, 1]>, !fusion.tensor<f32[8(2 didx, 4), 6], mesh=[0, 1]> -> !fusion.tensor<f32[4, 6, r8]>
  fusion.return %c : !fusion.tensor<f32[4, 6, r8]>
}

// -----

// Matmul + reduce-scatter: the result is sharded on M, so the partial sums are
// reduce-scattered.
// CHECK-LABEL: hir.program @matmul_reduce_scatter(
// CHECK:         %[[P:.+]] = fusion.matmul
// CHECK:         %c = hir.allocate : !fusion.tensor<f32[r2, 8(2 didx, 4), 6], mesh=[0, 1]>
// CHECK-NEXT:    %[[W:.+]] = hir.reduce_scatter %[[P]] -> %c team [0, 1] op sum
// CHECK-NEXT:    hir.wait %[[W]]
fusion.func @matmul_reduce_scatter(%x: !fusion.tensor<f32[8, 4(2 didx, 2)], mesh=[0, 1]>, %w: !fusion.tensor<f32[4(2 didx, 2), 6], mesh=[0, 1]>) -> !fusion.tensor<f32[8(2 didx, 4), 6, r4], mesh=[0, 1]> {
  %c = fusion.matmul %x, %w : !fusion.tensor<f32[8, 4(2 didx, 2)], mesh=[0, 1]>, !fusion.tensor<f32[4(2 didx, 2), 6], mesh=[0, 1]> -> !fusion.tensor<f32[8(2 didx, 4), 6, r4], mesh=[0, 1]>
  fusion.return %c : !fusion.tensor<f32[8(2 didx, 4), 6, r4], mesh=[0, 1]>
}

// -----

// A stream-parallel allgather: the collective lands in the main stream loop, writing
// into the view of the output chunk, with its wait right after it.
// CHECK-LABEL: hir.program @stream_allgather(
// CHECK:         %s = hir.allocate
// CHECK:         scf.for
// CHECK:         scf.for
// CHECK:           %[[IN:.+]] = hir.alias_select %x
// CHECK-NEXT:      %[[OUT:.+]] = hir.alias_select %s
// CHECK-NEXT:      %[[W:.+]] = hir.allgather %[[IN]] -> %[[OUT]] team [0, 1]
// CHECK-NEXT:      hir.wait %[[W]]
// CHECK-NEXT:      hir.set_current_stream
// CHECK-NEXT:      hir.synchronize
// CHECK-NEXT:    }
// CHECK-NEXT:    hir.return %s
fusion.func @stream_allgather(%x: !fusion.tensor<f32[4, 2 didx, 8], mesh=[0, 1]>) -> !fusion.tensor<f32[4 stream, 2, 8], mesh=[0, 1]> {
  %s = fusion.set %x : !fusion.tensor<f32[4, 2 didx, 8], mesh=[0, 1]> -> !fusion.tensor<f32[4 stream, 2, 8], mesh=[0, 1]>
  fusion.return %s : !fusion.tensor<f32[4 stream, 2, 8], mesh=[0, 1]>
}

// -----

// A matmul whose stream axis is its input's device axis: decompose-reshardings puts a
// set in front, which stream-parallel-type runs as a ring of shifts (the P2P pipeline).
// CHECK-LABEL: hir.program @p2p_matmul(
// CHECK:         scf.for %[[I:.+]] = %c0 to %extent step %c1 {
// CHECK:           %member = arith.remui
// CHECK-NEXT:      %[[T:.+]] = hir.alias_select %[[BUF:.+]][%member] axis 0
// CHECK-NEXT:      %[[W:.+]] = hir.shift %a -> %[[T]] team [0, 1] offset %[[I]]
// CHECK-NEXT:      hir.wait %[[W]]
// CHECK-NEXT:      %c_i = hir.alias_select %c[%member] axis 0
// CHECK-NEXT:      fusion.matmul %[[T]], %b into %c_i
fusion.func @p2p_matmul(%a: !fusion.tensor<f32[2 didx, 4, 8], mesh=[0, 1]>, %b: !fusion.tensor<f32[8, 3], mesh=[0, 1]>) -> !fusion.tensor<f32[2 stream, 4, 3, r8], mesh=[0, 1]> {
  %c = fusion.matmul %a, %b : !fusion.tensor<f32[2 didx, 4, 8], mesh=[0, 1]>, !fusion.tensor<f32[8, 3], mesh=[0, 1]> -> !fusion.tensor<f32[2 stream, 4, 3, r8], mesh=[0, 1]>
  fusion.return %c : !fusion.tensor<f32[2 stream, 4, 3, r8], mesh=[0, 1]>
}

// -----

// A gather from a 2-D mesh to another mesh, which no one collective pairs: gathered along
// DIDy on the 2-D mesh, then broadcast whole from its first device.
// CHECK-LABEL: hir.program @gather_2d(
// CHECK-NEXT:    %[[G:.+]] = hir.allocate : !fusion.tensor<f32[2, 8], mesh=[[0, 1], [2, 3]]>
// CHECK-NEXT:    %[[W:.+]] = hir.allgather %x -> %[[G]] team [[0, 1], [2, 3]] along didy
// CHECK-NEXT:    hir.wait %[[W]]
// CHECK-NEXT:    %s = hir.allocate : !fusion.tensor<f32[2, 8], mesh=[4]>
// CHECK-NEXT:    %[[B:.+]] = hir.broadcast %[[G]] -> %s team [4, 0] root 0
fusion.func @gather_2d(%x: !fusion.tensor<f32[2 didy, 8], mesh=[[0, 1], [2, 3]]>) -> !fusion.tensor<f32[2, 8], mesh=[4]> {
  %s = fusion.set %x : !fusion.tensor<f32[2 didy, 8], mesh=[[0, 1], [2, 3]]> -> !fusion.tensor<f32[2, 8], mesh=[4]>
  fusion.return %s : !fusion.tensor<f32[2, 8], mesh=[4]>
}

// -----

// Errors found late still point at the op the user wrote.
// CHECK: hostir_lower.mlir:[[# @LINE + 3]]:3: error: 'fusion.set' op DIDy on an inner split (axis 0 of {{.*}}) is not lowerable; split the axis outer
// OPTS:  hostir_lower.mlir:[[# @LINE + 2]]:3: error: 'fusion.set' op DIDy on an inner split
fusion.func @inner_split_didy(%a: !fusion.tensor<f32[8(4, 2 didy)], mesh=[[0, 1], [2, 3]]>) -> !fusion.tensor<f32[8], mesh=[[0, 1], [2, 3]]> {
  %b = fusion.set %a : !fusion.tensor<f32[8(4, 2 didy)], mesh=[[0, 1], [2, 3]]> -> !fusion.tensor<f32[8], mesh=[[0, 1], [2, 3]]>
  fusion.return %b : !fusion.tensor<f32[8], mesh=[[0, 1], [2, 3]]>
}
