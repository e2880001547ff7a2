// RUN: hostir-opt %s --split-input-file -p 'split-by-member{reduce-in-producer=false}' | filecheck %s

// An all-gather's consumer, split by member: own part first, read from the input in
// place (so the post leaves the own slot alone: peers_only), then each other part after
// its own wait (rotating from this rank's position), then the whole wait (this rank's
// own pushes, which read %a).
!a = !fusion.tensor<f32[2 didx, 4, 8], mesh=[0, 1]>
!g = !fusion.tensor<f32[2, 4, 8], mesh=[0, 1]>
!b = !fusion.tensor<f32[8, 3], mesh=[0, 1]>
!c = !fusion.tensor<f32[2, 4, 3, r8], mesh=[0, 1]>
hir.program @allgather_consumer(%a: !a, %b: !b) -> !c {
  %g = hir.allocate symmetric : !g
  %c = hir.allocate : !c
  %w = hir.allgather %a -> %g team [0, 1] transport copy_engine : !a -> !g
  hir.wait %w
  %r = fusion.matmul %g, %b into %c : !g, !b -> !c
  hir.deallocate %g : !g
  hir.return %r : !c
}
// CHECK-LABEL: hir.program @allgather_consumer
// CHECK-NEXT:    %me = hir.team_position team [0, 1]
// CHECK-NEXT:    %g = hir.allocate symmetric
// CHECK-NEXT:    %c = hir.allocate
// CHECK-NEXT:    %w = hir.allgather %a -> %g team [0, 1] transport copy_engine peers_only
// CHECK-NEXT:    %[[A:.*]] = hir.alias_select %a[%me] axis 0 : !fusion.tensor<f32[2 didx, 4, 8], mesh=[0, 1]> -> !fusion.tensor<f32[4, 8], mesh=[0, 1]>
// CHECK-NEXT:    %[[C:.*]] = hir.alias_select %c[%me] axis 0 : !fusion.tensor<f32[2, 4, 3, r8], mesh=[0, 1]> -> !fusion.tensor<f32[4, 3, r8], mesh=[0, 1]>
// CHECK-NEXT:    %{{.*}} = fusion.matmul %[[A]], %b into %[[C]]
// CHECK-NEXT:    %s0 = arith.constant 1 : index
// CHECK-NEXT:    %team = arith.constant 2 : index
// CHECK-NEXT:    %c1 = arith.constant 1 : index
// CHECK-NEXT:    scf.for %s = %s0 to %team step %c1 {
// CHECK-NEXT:      %[[T:.*]] = arith.addi %me, %s : index
// CHECK-NEXT:      %p = arith.remui %[[T]], %team : index
// CHECK-NEXT:      hir.wait %w from %p
// CHECK-NEXT:      %g_p = hir.alias_select %g[%p] axis 0 : !fusion.tensor<f32[2, 4, 8], mesh=[0, 1]> -> !fusion.tensor<f32[4, 8], mesh=[0, 1]>
// CHECK-NEXT:      %[[CP:.*]] = hir.alias_select %c[%p] axis 0 : !fusion.tensor<f32[2, 4, 3, r8], mesh=[0, 1]> -> !fusion.tensor<f32[4, 3, r8], mesh=[0, 1]>
// CHECK-NEXT:      %{{.*}} = fusion.matmul %g_p, %b into %[[CP]]
// CHECK-NEXT:    }
// CHECK-NEXT:    hir.wait %w
// CHECK-NEXT:    hir.deallocate %g
// CHECK-NEXT:    hir.return %c


// -----

// A reduce-scatter's producer, split by member: the other members' chunks, the post
// (which reads only those), this rank's chunk, then the wait.
!a = !fusion.tensor<f32[2 didx, 2, 4, 4], mesh=[0, 1]>
!b = !fusion.tensor<f32[2 didx, b1, 4, 3], mesh=[0, 1]>
!u = !fusion.tensor<f32[2 didx, 2, 4, 3, r4], mesh=[0, 1]>
!c = !fusion.tensor<f32[r2, 2 didx, 4, 3], mesh=[0, 1]>
!v = !fusion.tensor<f32[2 didx, 2, 4, 3], mesh=[0, 1]>
hir.program @reduce_scatter_producer(%a: !a, %b: !b) -> !c {
  %u = hir.allocate : !u
  %c = hir.allocate : !c
  %via = hir.allocate symmetric : !v
  %r = fusion.matmul %a, %b into %u : !a, !b -> !u
  %w = hir.reduce_scatter %u -> %c via %via team [0, 1] op sum transport copy_engine : !u -> !c, !v
  hir.wait %w
  hir.deallocate %via : !v
  hir.return %c : !c
}
// CHECK-LABEL: hir.program @reduce_scatter_producer
// CHECK-NEXT:    %me = hir.team_position team [0, 1]
// CHECK:         %via = hir.allocate symmetric
// CHECK-NEXT:    %s0 = arith.constant 1 : index
// CHECK-NEXT:    %team = arith.constant 2 : index
// CHECK-NEXT:    %c1 = arith.constant 1 : index
// CHECK-NEXT:    scf.for %s = %s0 to %team step %c1 {
// CHECK-NEXT:      %[[T:.*]] = arith.addi %me, %s : index
// CHECK-NEXT:      %p = arith.remui %[[T]], %team : index
// CHECK-NEXT:      %a_p = hir.alias_select %a[%p] axis 1
// CHECK-NEXT:      %b_p = hir.alias_select %b[%p] axis 1
// CHECK-NEXT:      %u_p = hir.alias_select %u[%p] axis 1
// CHECK-NEXT:      fusion.matmul %a_p, %b_p into %u_p
// CHECK-NEXT:    }
// CHECK-NEXT:    %w = hir.reduce_scatter %u -> %c via %via
// CHECK-NEXT:    %[[A:.*]] = hir.alias_select %a[%me] axis 1
// CHECK-NEXT:    %[[B:.*]] = hir.alias_select %b[%me] axis 1
// CHECK-NEXT:    %[[U:.*]] = hir.alias_select %u[%me] axis 1
// CHECK-NEXT:    fusion.matmul %[[A]], %[[B]] into %[[U]]
// CHECK-NEXT:    hir.wait %w
// CHECK-NEXT:    hir.deallocate %via

// -----

// The input holds this rank's part but its type does not say it is sharded (a program
// written by hand): the own part cannot be selected from it, so the post copies it into
// the output and the loop starts at the own part.
!a = !fusion.tensor<f32[4, 8], mesh=[0, 1]>
!g = !fusion.tensor<f32[2, 4, 8], mesh=[0, 1]>
!b = !fusion.tensor<f32[8, 3], mesh=[0, 1]>
!c = !fusion.tensor<f32[2, 4, 3, r8], mesh=[0, 1]>
hir.program @input_not_sharded(%a: !a, %b: !b) -> !c {
  %g = hir.allocate symmetric : !g
  %c = hir.allocate : !c
  %w = hir.allgather %a -> %g team [0, 1] transport copy_engine : !a -> !g
  hir.wait %w
  %r = fusion.matmul %g, %b into %c : !g, !b -> !c
  hir.deallocate %g : !g
  hir.return %r : !c
}
// CHECK-LABEL: hir.program @input_not_sharded
// CHECK:         %w = hir.allgather %a -> %g team [0, 1] transport copy_engine :
// CHECK-NEXT:    %s0 = arith.constant 0 : index
// CHECK:         scf.for %s = %s0 to %team step %c1 {
// CHECK:           hir.wait %w from %p
// CHECK:           fusion.matmul %g_p, %b into
// CHECK:         }
// CHECK-NEXT:    hir.wait %w
// CHECK-NEXT:    hir.deallocate %g

// -----

// Left whole: NCCL collectives (their post reads the whole input, their wait is whole).
!a = !fusion.tensor<f32[2 didx, 4, 8], mesh=[0, 1]>
!g = !fusion.tensor<f32[2, 4, 8], mesh=[0, 1]>
!b = !fusion.tensor<f32[8, 3], mesh=[0, 1]>
!c = !fusion.tensor<f32[2, 4, 3, r8], mesh=[0, 1]>
hir.program @nccl(%a: !a, %b: !b) -> !c {
  %g = hir.allocate : !g
  %c = hir.allocate : !c
  %w = hir.allgather %a -> %g team [0, 1] : !a -> !g
  hir.wait %w
  %r = fusion.matmul %g, %b into %c : !g, !b -> !c
  hir.return %r : !c
}
// CHECK-LABEL: hir.program @nccl
// CHECK:         hir.wait %w
// CHECK-NEXT:    %r = fusion.matmul %g, %b into %c

// -----

// Left whole: the gathered buffer has a second reader.
!a = !fusion.tensor<f32[2 didx, 4, 8], mesh=[0, 1]>
!g = !fusion.tensor<f32[2, 4, 8], mesh=[0, 1]>
!b = !fusion.tensor<f32[8, 3], mesh=[0, 1]>
!c = !fusion.tensor<f32[2, 4, 3, r8], mesh=[0, 1]>
hir.program @two_readers(%a: !a, %b: !b) -> (!c, !g) {
  %g = hir.allocate symmetric : !g
  %c = hir.allocate : !c
  %e = hir.allocate : !g
  %w = hir.allgather %a -> %g team [0, 1] transport copy_engine : !a -> !g
  hir.wait %w
  %r = fusion.matmul %g, %b into %c : !g, !b -> !c
  %x = fusion.exp %g into %e : !g -> !g
  hir.deallocate %g : !g
  hir.return %r, %x : !c, !g
}
// CHECK-LABEL: hir.program @two_readers
// CHECK-NOT:     scf.for
// CHECK:         hir.wait %w
// CHECK-NEXT:    %r = fusion.matmul %g, %b into %c

// -----

// Left whole: the members' parts are 2 rows each of an axis of 4 (a part is no single
// index of an axis).
!a = !fusion.tensor<f32[4(2 didx, 2), 8], mesh=[0, 1]>
!g = !fusion.tensor<f32[4, 8], mesh=[0, 1]>
!b = !fusion.tensor<f32[8, 3], mesh=[0, 1]>
!c = !fusion.tensor<f32[4, 3, r8], mesh=[0, 1]>
hir.program @parts_of_several_rows(%a: !a, %b: !b) -> !c {
  %g = hir.allocate symmetric : !g
  %c = hir.allocate : !c
  %w = hir.allgather %a -> %g team [0, 1] transport copy_engine : !a -> !g
  hir.wait %w
  %r = fusion.matmul %g, %b into %c : !g, !b -> !c
  hir.deallocate %g : !g
  hir.return %r : !c
}
// CHECK-LABEL: hir.program @parts_of_several_rows
// CHECK-NOT:     scf.for
// CHECK:         hir.wait %w
// CHECK-NEXT:    %r = fusion.matmul %g, %b into %c

// -----

// A team of 4: four parts, own first.
!a = !fusion.tensor<f32[4 didx, 8], mesh=[0, 1, 2, 3]>
!g = !fusion.tensor<f32[4, 8], mesh=[0, 1, 2, 3]>
!b = !fusion.tensor<f32[8, 3], mesh=[0, 1, 2, 3]>
!c = !fusion.tensor<f32[4, 3, r8], mesh=[0, 1, 2, 3]>
hir.program @team_of_four(%a: !a, %b: !b) -> !c {
  %g = hir.allocate symmetric : !g
  %c = hir.allocate : !c
  %w = hir.allgather %a -> %g team [0, 1, 2, 3] transport copy_engine : !a -> !g
  hir.wait %w
  %r = fusion.matmul %g, %b into %c : !g, !b -> !c
  hir.deallocate %g : !g
  hir.return %r : !c
}
// CHECK-LABEL: hir.program @team_of_four
// CHECK-NEXT:    %me = hir.team_position team [0, 1, 2, 3]
// CHECK:         hir.allgather {{.*}} peers_only
// CHECK:         %team = arith.constant 4 : index
// CHECK:         hir.wait %w from %p
// CHECK:         }
// CHECK-NEXT:    hir.wait %w

// -----

// An all-reduce's producer, split as a reduce-scatter's: the copy-engine all-reduce's
// post sends the other members' chunks only (docs/copy_engine.md). Without
// reduce-in-producer (by default the all-reduce computes the own part itself:
// split_by_member_reduce_in_producer.mlir).
!a = !fusion.tensor<f32[2 didx, 2, 4, 4], mesh=[0, 1]>
!b = !fusion.tensor<f32[2 didx, b1, 4, 3], mesh=[0, 1]>
!u = !fusion.tensor<f32[2 didx, 2, 4, 3, r4], mesh=[0, 1]>
!c = !fusion.tensor<f32[r2 didx, 2, 4, 3], mesh=[0, 1]>
!v = !fusion.tensor<f32[2, 2 didx, 2, 4, 3], mesh=[0, 1]>
hir.program @allreduce_producer(%a: !a, %b: !b) -> !c {
  %u = hir.allocate : !u
  %c = hir.allocate : !c
  %via = hir.allocate symmetric : !v
  %r = fusion.matmul %a, %b into %u : !a, !b -> !u
  %w = hir.allreduce %u -> %c via %via team [0, 1] op sum transport copy_engine : !u -> !c, !v
  hir.wait %w
  hir.deallocate %via : !v
  hir.return %c : !c
}
// CHECK-LABEL: hir.program @allreduce_producer
// CHECK:         scf.for %s = %s0 to %team step %c1 {
// CHECK:           fusion.matmul %a_p, %b_p into %u_p
// CHECK:         }
// CHECK-NEXT:    %w = hir.allreduce %u -> %c via %via
// CHECK:         fusion.matmul {{.*}} into
// CHECK-NEXT:    hir.wait %w

// -----

// An all-reduce's producer split in blocks: any D equal contiguous blocks of the
// all-reduce's buffer are its members' chunks, so where the outermost axis (the S chunks
// of a pipeline run whole) is not the team but D divides it, member p's part is block p
// of it (`alias_chunk ... parts 2`). The matmul allocated its result: the parts write a
// buffer allocated in its place.
!a = !fusion.tensor<f32[4, 2 didx, 3, 4], mesh=[0, 1]>
!b = !fusion.tensor<f32[b1, 2 didx, 4, 5], mesh=[0, 1]>
!u = !fusion.tensor<f32[4, 2 didx, 3, 5, r4], mesh=[0, 1]>
!c = !fusion.tensor<f32[4, r2, 3, 5], mesh=[0, 1]>
!v = !fusion.tensor<f32[2, 4, 2 didx, 3, 5], mesh=[0, 1]>
hir.program @allreduce_producer_in_blocks(%a: !a, %b: !b) -> !c {
  %u = fusion.matmul %a, %b : !a, !b -> !u
  %via = hir.allocate symmetric : !v
  %c = hir.allocate : !c
  %w = hir.allreduce %u -> %c via %via team [0, 1] op sum transport copy_engine : !u -> !c, !v
  hir.wait %w
  hir.deallocate %via : !v
  hir.return %c : !c
}
// CHECK-LABEL: hir.program @allreduce_producer_in_blocks
// CHECK-NEXT:    %me = hir.team_position team [0, 1]
// CHECK-NEXT:    %u = hir.allocate : !fusion.tensor<f32[4, 2 didx, 3, 5, r4], mesh=[0, 1]>
// CHECK:         scf.for %s = %s0 to %team step %c1 {
// CHECK:           %p = arith.remui
// CHECK-NEXT:      %a_p = hir.alias_chunk %a[%p] axis 0 parts 2 : !fusion.tensor<f32[4, 2 didx, 3, 4], mesh=[0, 1]> -> !fusion.tensor<f32[2, 2 didx, 3, 4], mesh=[0, 1]>
// CHECK-NEXT:      %u_p = hir.alias_chunk %u[%p] axis 0 parts 2
// CHECK-NEXT:      fusion.matmul %a_p, %b into %u_p
// CHECK-NEXT:    }
// CHECK-NEXT:    %via = hir.allocate symmetric
// CHECK-NEXT:    %c = hir.allocate
// CHECK-NEXT:    %w = hir.allreduce %u -> %c via %via
// CHECK-NEXT:    %[[A:.*]] = hir.alias_chunk %a[%me] axis 0 parts 2
// CHECK-NEXT:    %[[U:.*]] = hir.alias_chunk %u[%me] axis 0 parts 2
// CHECK-NEXT:    fusion.matmul %[[A]], %b into %[[U]]
// CHECK-NEXT:    hir.wait %w
// CHECK-NEXT:    hir.deallocate %via
// CHECK-NEXT:    hir.return %c

// -----

// Left whole: the team size does not divide the all-reduce's outermost axis, so no axis
// holds the members' chunks (each is one and a half of its 3 blocks).
!a = !fusion.tensor<f32[3, 2 didx, 2, 4], mesh=[0, 1]>
!b = !fusion.tensor<f32[b1, 2 didx, 4, 5], mesh=[0, 1]>
!u = !fusion.tensor<f32[3, 2 didx, 2, 5, r4], mesh=[0, 1]>
!c = !fusion.tensor<f32[3, r2, 2, 5], mesh=[0, 1]>
!v = !fusion.tensor<f32[2, 3, 2 didx, 2, 5], mesh=[0, 1]>
hir.program @allreduce_blocks_not_dividing(%a: !a, %b: !b) -> !c {
  %u = fusion.matmul %a, %b : !a, !b -> !u
  %via = hir.allocate symmetric : !v
  %c = hir.allocate : !c
  %w = hir.allreduce %u -> %c via %via team [0, 1] op sum transport copy_engine : !u -> !c, !v
  hir.wait %w
  hir.deallocate %via : !v
  hir.return %c : !c
}
// CHECK-LABEL: hir.program @allreduce_blocks_not_dividing
// CHECK-NEXT:    %u = fusion.matmul %a, %b :
// CHECK-NEXT:    %via = hir.allocate symmetric

// -----

// Left whole: the consumer allocates its result but reads a slice of the gathered axis,
// so member p's part of its result is not part p of its input (found on 4 CPU ranks: a
// split selected parts past the slice's extent).
!a = !fusion.tensor<f32[2 didx, 3], mesh=[0, 1]>
!g = !fusion.tensor<f32[2, 3], mesh=[0, 1]>
!s = !fusion.tensor<f32[1, 3], mesh=[0, 1]>
hir.program @sliced_consumer(%a: !a) -> !s {
  %g = hir.allocate symmetric : !g
  %w = hir.allgather %a -> %g team [0, 1] transport copy_engine : !a -> !g
  hir.wait %w
  %s = fusion.slice %g starts [0, 0] stops [1, 3] steps [1, 1] : !g -> !s
  hir.deallocate %g : !g
  hir.return %s : !s
}
// CHECK-LABEL: hir.program @sliced_consumer
// CHECK-NEXT:    %g = hir.allocate symmetric
// CHECK-NEXT:    %w = hir.allgather %a -> %g team [0, 1] transport copy_engine :
// CHECK-NEXT:    hir.wait %w
// CHECK-NEXT:    %s = fusion.slice %g
