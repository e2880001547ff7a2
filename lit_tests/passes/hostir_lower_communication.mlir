// RUN: hostir-opt %s --split-input-file -p hostir-lower | filecheck %s
// RUN: hostir-opt %s --split-input-file -p hostir-lower | grep -E -o "hir\.program @[a-z_]+|hir\.(allgather|allreduce|reduce_scatter|scatter|gather|broadcast|reduce|send_recv|all_to_all|shift|send|recv|local_shard) " | filecheck %s --check-prefix=COMM

// The whole pipeline communicates no more than nvFuser does: the communications of each
// lowered program, every one in order (COMM), and what they move (issue 25).

// A row-parallel linear (K sharded) feeding a sequence-sharded consumer: the linear's
// output takes the sequence sharding (a device type on its reduction axis only is not
// one it has, as in nvFuser's propagation), and the partial sums are reduce-scattered
// once: half the bytes of an all-reduce and a scatter.
// COMM-LABEL:  hir.program @sequence_parallel_linear_add{{$}}
// COMM-NEXT:   hir.reduce_scatter
// COMM-NOT:    hir
// CHECK-LABEL: hir.program @sequence_parallel_linear_add(
// CHECK:         hir.reduce_scatter {{.*}}team [0, 1] op sum{{.*}} : !fusion.tensor<f32[2 didx, 3, 4, 5]{{.*}}> -> !fusion.tensor<f32[r2, 3, 4(2 didx, 2), 5]
// CHECK:         fusion.add %{{.+}}, %r : !fusion.tensor<f32[3, 4(2 didx, 2), 5], mesh=[0, 1]>
// CHECK:       }
fusion.func @sequence_parallel_linear_add(%x: !fusion.tensor<f32[3, 4, 8(2 didx, 4)], mesh=[0, 1]>, %w: !fusion.tensor<f32[5, 8(2 didx, 4)], mesh=[0, 1]>, %r: !fusion.tensor<f32[3, 4(2 didx, 2), 5], mesh=[0, 1]>) -> !fusion.tensor<f32[3, 4(2 didx, 2), 5], mesh=[0, 1]> {
  %y = fusion.linear %x, %w : !fusion.tensor<f32[3, 4, 8(2 didx, 4)], mesh=[0, 1]>, !fusion.tensor<f32[5, 8(2 didx, 4)], mesh=[0, 1]> -> !fusion.tensor<f32[3, 4, 5, r8]>
  %z = fusion.add %y, %r : !fusion.tensor<f32[3, 4, 5, r8]>, !fusion.tensor<f32[3, 4(2 didx, 2), 5], mesh=[0, 1]> -> !fusion.tensor<f32[3, 4(2 didx, 2), 5], mesh=[0, 1]>
  fusion.return %z : !fusion.tensor<f32[3, 4(2 didx, 2), 5], mesh=[0, 1]>
}

// -----

// The same with every extent but the sharded ones' factors dynamic, as nvFuser's tests
// declare their inputs.
// COMM-LABEL:  hir.program @sequence_parallel_linear_add_dynamic{{$}}
// COMM-NEXT:   hir.reduce_scatter
// COMM-NOT:    hir
fusion.func @sequence_parallel_linear_add_dynamic(%x: !fusion.tensor<f32[?, ?, ?(2 didx, ?)], mesh=[0, 1]>, %w: !fusion.tensor<f32[5, ?(2 didx, ?)], mesh=[0, 1]>, %r: !fusion.tensor<f32[?, ?(2 didx, ?), 5], mesh=[0, 1]>) -> !fusion.tensor<f32[?, ?(2 didx, ?), 5], mesh=[0, 1]> {
  %y = fusion.linear %x, %w : !fusion.tensor<f32[?, ?, ?(2 didx, ?)], mesh=[0, 1]>, !fusion.tensor<f32[5, ?(2 didx, ?)], mesh=[0, 1]> -> !fusion.tensor<f32[?, ?, 5, r?]>
  %z = fusion.add %y, %r : !fusion.tensor<f32[?, ?, 5, r?]>, !fusion.tensor<f32[?, ?(2 didx, ?), 5], mesh=[0, 1]> -> !fusion.tensor<f32[?, ?(2 didx, ?), 5], mesh=[0, 1]>
  fusion.return %z : !fusion.tensor<f32[?, ?(2 didx, ?), 5], mesh=[0, 1]>
}

// -----

// A replicated operand combined with a sharded one: each rank keeps its own part of its
// own copy (hir.local_shard), nothing moves and nothing is waited, where nvFuser scatters
// the operand from the first device.
// COMM-LABEL:  hir.program @replicated_plus_sharded{{$}}
// COMM-NEXT:   hir.local_shard
// COMM-NOT:    hir
// CHECK-LABEL: hir.program @replicated_plus_sharded(
// CHECK-NEXT:    %[[A:.+]] = hir.allocate : !fusion.tensor<f32[4(2 didx, 2), 6], mesh=[0, 1]>
// CHECK-NEXT:    hir.local_shard %a -> %[[A]] axis 0 team [0, 1] : !fusion.tensor<f32[4, 6], mesh=[0, 1]> -> !fusion.tensor<f32[4(2 didx, 2), 6], mesh=[0, 1]>
// CHECK-NEXT:    %c = fusion.add %[[A]], %b
// CHECK:       }
fusion.func @replicated_plus_sharded(%a: !fusion.tensor<f32[4, 6], mesh=[0, 1]>, %b: !fusion.tensor<f32[4(2 didx, 2), 6], mesh=[0, 1]>) -> !fusion.tensor<f32[4(2 didx, 2), 6], mesh=[0, 1]> {
  %c = fusion.add %a, %b : !fusion.tensor<f32[4, 6], mesh=[0, 1]>, !fusion.tensor<f32[4(2 didx, 2), 6], mesh=[0, 1]> -> !fusion.tensor<f32[4(2 didx, 2), 6], mesh=[0, 1]>
  fusion.return %c : !fusion.tensor<f32[4(2 didx, 2), 6], mesh=[0, 1]>
}

// -----

// A sum over a sharded axis between two dynamic ones: the rFactor's reshape
// [?, 6(2 didx, 3), ?] -> [?, 2 didx, 3, ?] pairs the dynamic extents, so it is local
// (no gather and scatter around it): a local sum, then one all-reduce.
// COMM-LABEL:  hir.program @sum_between_dynamic_extents{{$}}
// COMM-NEXT:   hir.allreduce
// COMM-NOT:    hir
// CHECK-LABEL: hir.program @sum_between_dynamic_extents(
// CHECK:         hir.allreduce
// CHECK:       fusion.func @sum_between_dynamic_extents_unit0(
// CHECK:         fusion.reshape %{{.+}} : !fusion.tensor<f32[?, 6(2 didx, 3), ?], mesh=[0, 1]> -> !fusion.tensor<f32[?, 2 didx, 3, ?], mesh=[0, 1]>
fusion.func @sum_between_dynamic_extents(%x: !fusion.tensor<f32[?, 6(2 didx, 3), ?], mesh=[0, 1]>) -> !fusion.tensor<f32[?, r6, ?]> {
  %y = fusion.reduce sum %x dims [1] : !fusion.tensor<f32[?, 6(2 didx, 3), ?], mesh=[0, 1]> -> !fusion.tensor<f32[?, r6, ?]>
  fusion.return %y : !fusion.tensor<f32[?, r6, ?]>
}
