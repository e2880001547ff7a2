// RUN: hostir-opt %examples/fusions/ag_matmul.mlir -p 'hostir-lower{transport=nccl},canonicalize,cse,dce' | filecheck %s --check-prefix=AG
// RUN: hostir-opt %examples/fusions/matmul_rs_through_bcast.mlir -p 'hostir-lower{transport=nccl},canonicalize,cse,dce' | filecheck %s --check-prefix=RS
// RUN: hostir-opt %s -p canonicalize,cse,dce | filecheck %s

// hostir-opt registers xDSL's canonicalize, cse and dce. hostir's ops declare their
// memory effects, so on a lowered program they keep every host effect (buffers, stream
// switches and waits, collectives and their waits, compute into destinations, posts,
// deallocations) and the loops around them.

// AG-LABEL: hir.program @ag_matmul(
// AG-NEXT:    arith.constant 0
// AG-NEXT:    arith.constant 1
// AG-NEXT:    arith.constant 4
// AG-NEXT:    %[[GATHERED:.+]] = hir.allocate
// AG-NEXT:    %c = hir.allocate
// AG-NEXT:    %user_stream = hir.get_current_stream
// AG-NEXT:    scf.for
// AG-NEXT:      hir.number_of_streams
// AG-NEXT:      arith.remui
// AG-NEXT:      hir.stream
// AG-NEXT:      hir.set_current_stream
// AG-NEXT:      hir.synchronize %user_stream
// AG-NEXT:    }
// AG-NEXT:    scf.for
// AG-NEXT:      hir.number_of_streams
// AG-NEXT:      arith.remui
// AG-NEXT:      %[[WORKER:.+]] = hir.stream
// AG-NEXT:      hir.set_current_stream %[[WORKER]]
// AG-NEXT:      %a_i = hir.alias_select %a
// AG-NEXT:      %[[GATHERED_I:.+]] = hir.alias_select %[[GATHERED]]
// AG-NEXT:      %w = hir.allgather %a_i -> %[[GATHERED_I]] team [0, 1]
// AG-NEXT:      hir.wait %w
// AG-NEXT:      %c_i = hir.alias_select %c
// AG-NEXT:      fusion.matmul %[[GATHERED_I]], %b into %c_i
// AG-NEXT:      hir.set_current_stream %user_stream
// AG-NEXT:      hir.synchronize %[[WORKER]]
// AG-NEXT:    }
// AG-NEXT:    hir.deallocate %[[GATHERED]]
// AG-NEXT:    hir.return %c

// RS-LABEL: hir.program @matmul_rs_through_bcast(
// RS-NEXT:    %bb = hir.post_on_stream @matmul_rs_through_bcast_unit0(%b)
// RS:         %u = hir.allocate
// RS-NEXT:    %c = hir.allocate
// RS-NEXT:    %user_stream = hir.get_current_stream
// RS:         fusion.matmul %a_i, %bb_i into %u_i
// RS-NEXT:    %c_i = hir.alias_select %c
// RS-NEXT:    %w = hir.reduce_scatter %u_i -> %c_i team [0, 1] op sum
// RS-NEXT:    hir.wait %w
// RS-NEXT:    hir.set_current_stream %user_stream
// RS-NEXT:    hir.synchronize
// RS-NEXT:  }
// RS-NEXT:  hir.deallocate %bb
// RS-NEXT:  hir.deallocate %u
// RS-NEXT:  hir.return %c
// RS:       fusion.func @matmul_rs_through_bcast_unit0(
// RS-NEXT:    fusion.broadcast %b
// RS-NEXT:    fusion.return

// What they do remove: pure values nothing uses (a compute op without destination, a
// view, an extent), duplicates of pure values, an empty loop. Everything else stays,
// unused allocations included.
// CHECK-LABEL: hir.program @main(
// CHECK-NEXT:    %c0 = arith.constant 0 : index
// CHECK-NEXT:    %c1 = arith.constant 1 : index
// CHECK-NEXT:    %c8 = arith.constant 8 : index
// CHECK-NEXT:    %buf = hir.allocate
// CHECK-NEXT:    %unused_buf = hir.allocate
// CHECK-NEXT:    %user = hir.get_current_stream
// CHECK-NEXT:    scf.for %i = %c0 to %c8 step %c1 {
// CHECK-NEXT:      %n = hir.number_of_streams
// CHECK-NEXT:      %key = arith.remui %i, %n : index
// CHECK-NEXT:      %worker = hir.stream %key
// CHECK-NEXT:      hir.set_current_stream %worker
// CHECK-NEXT:      hir.synchronize %user
// CHECK-NEXT:      %row = hir.alias_select %buf[%i] axis 0
// CHECK-NEXT:      %copied = fusion.set %x into %row
// CHECK-NEXT:      hir.set_current_stream %user
// CHECK-NEXT:      hir.synchronize %worker
// CHECK-NEXT:    }
// CHECK-NEXT:    %ag = hir.allgather %x -> %y team [0, 1]
// CHECK-NEXT:    %ar = hir.allreduce %x -> %x team [0, 1] op sum
// CHECK-NEXT:    hir.wait %ag
// CHECK-NEXT:    hir.wait %ar
// CHECK-NEXT:    %posted = hir.post_on_stream @unit(%a)
// CHECK-NEXT:    hir.deallocate %unused_buf
// CHECK-NEXT:    hir.return %buf
// CHECK-NEXT:  }
// CHECK-NEXT:  fusion.func @unit(
// CHECK-NEXT:    %b = fusion.exp %a
// CHECK-NEXT:    fusion.return %b
hir.program @main(%a: !fusion.tensor<f32[8, 4]>, %x: !fusion.tensor<f32[4]>, %y: !fusion.tensor<f32[8]>) -> !fusion.tensor<f32[8, 4]> {
  %dead_pure = fusion.neg %a : !fusion.tensor<f32[8, 4]> -> !fusion.tensor<f32[8, 4]>
  %dead_extent = hir.extent %a axis 0 : !fusion.tensor<f32[8, 4]>
  %c0 = arith.constant 0 : index
  %c0_again = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c8 = arith.constant 8 : index
  %buf = hir.allocate : !fusion.tensor<f32[8, 4]>
  %unused_buf = hir.allocate : !fusion.tensor<f32[8, 4]>
  %user = hir.get_current_stream
  scf.for %i = %c0 to %c8 step %c1 {
    %n = hir.number_of_streams
    %n_again = hir.number_of_streams
    %key = arith.remui %i, %n : index
    %worker = hir.stream %key
    hir.set_current_stream %worker
    hir.synchronize %user
    %row = hir.alias_select %buf[%i] axis 0 : !fusion.tensor<f32[8, 4]> -> !fusion.tensor<f32[4]>
    %dead_view = hir.alias_select %a[%i] axis 0 : !fusion.tensor<f32[8, 4]> -> !fusion.tensor<f32[4]>
    %copied = fusion.set %x into %row : !fusion.tensor<f32[4]> -> !fusion.tensor<f32[4]>
    hir.set_current_stream %user
    hir.synchronize %worker
  }
  scf.for %j = %c0_again to %c8 step %c1 {
  }
  %ag = hir.allgather %x -> %y team [0, 1] : !fusion.tensor<f32[4]> -> !fusion.tensor<f32[8]>
  %ar = hir.allreduce %x -> %x team [0, 1] op sum : !fusion.tensor<f32[4]> -> !fusion.tensor<f32[4]>
  hir.wait %ag
  hir.wait %ar
  %posted = hir.post_on_stream @unit(%a) : (!fusion.tensor<f32[8, 4]>) -> !fusion.tensor<f32[8, 4]>
  hir.deallocate %unused_buf : !fusion.tensor<f32[8, 4]>
  hir.return %buf : !fusion.tensor<f32[8, 4]>
}
fusion.func @unit(%a: !fusion.tensor<f32[8, 4]>) -> !fusion.tensor<f32[8, 4]> {
  %dead_in_unit = fusion.abs %a : !fusion.tensor<f32[8, 4]> -> !fusion.tensor<f32[8, 4]>
  %b = fusion.exp %a : !fusion.tensor<f32[8, 4]> -> !fusion.tensor<f32[8, 4]>
  fusion.return %b : !fusion.tensor<f32[8, 4]>
}
