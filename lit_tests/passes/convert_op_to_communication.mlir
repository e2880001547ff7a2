// RUN: hostir-opt %s --split-input-file -p convert-op-to-communication | filecheck %s

// One case per row of the decision table (passes/convert_op_to_communication.py), nvFuser's
// communication lowering cases (tests/cpp/test_multidevice_lower_communication.cpp), 2-D
// meshes, and resharding ops inside loops.

// Set, in not sharded, out sharded: Scatter from the first sender device in the receiver mesh (LowerScatterTest {0}->{0,1}).
// CHECK-LABEL: hir.program @scatter(
// CHECK-NEXT:    %b = hir.allocate : !fusion.tensor<f32[2 didx, 8], mesh=[0, 1]>
// CHECK-NEXT:    %[[W00:.+]] = hir.scatter %a -> %b team [0, 1] root 0 : !fusion.tensor<f32[2, 8], mesh=[0]> -> !fusion.tensor<f32[2 didx, 8], mesh=[0, 1]>
// CHECK-NEXT:    hir.wait %[[W00]]
// CHECK-NEXT:    hir.return %b : !fusion.tensor<f32[2 didx, 8], mesh=[0, 1]>
hir.program @scatter(%a: !fusion.tensor<f32[2, 8], mesh=[0]>) -> !fusion.tensor<f32[2 didx, 8], mesh=[0, 1]> {
  %b = fusion.set %a : !fusion.tensor<f32[2, 8], mesh=[0]> -> !fusion.tensor<f32[2 didx, 8], mesh=[0, 1]>
  hir.return %b : !fusion.tensor<f32[2 didx, 8], mesh=[0, 1]>
}

// -----

// LowerScatterTest {1}->{0,1}: the root is device 1.
// CHECK-LABEL: hir.program @scatter_root_1(
// CHECK-NEXT:    %b = hir.allocate : !fusion.tensor<f32[2 didx, 8], mesh=[0, 1]>
// CHECK-NEXT:    %[[W10:.+]] = hir.scatter %a -> %b team [0, 1] root 1 : !fusion.tensor<f32[2, 8], mesh=[1]> -> !fusion.tensor<f32[2 didx, 8], mesh=[0, 1]>
// CHECK-NEXT:    hir.wait %[[W10]]
// CHECK-NEXT:    hir.return %b : !fusion.tensor<f32[2 didx, 8], mesh=[0, 1]>
hir.program @scatter_root_1(%a: !fusion.tensor<f32[2, 8], mesh=[1]>) -> !fusion.tensor<f32[2 didx, 8], mesh=[0, 1]> {
  %b = fusion.set %a : !fusion.tensor<f32[2, 8], mesh=[1]> -> !fusion.tensor<f32[2 didx, 8], mesh=[0, 1]>
  hir.return %b : !fusion.tensor<f32[2 didx, 8], mesh=[0, 1]>
}

// -----

// LowerScatterTest {0,2}->{1,2}: the root is the first sender device that receives, 2.
// CHECK-LABEL: hir.program @scatter_common_device(
// CHECK-NEXT:    %b = hir.allocate : !fusion.tensor<f32[2 didx, 8], mesh=[1, 2]>
// CHECK-NEXT:    %[[W20:.+]] = hir.scatter %a -> %b team [1, 2] root 2 : !fusion.tensor<f32[2, 8], mesh=[0, 2]> -> !fusion.tensor<f32[2 didx, 8], mesh=[1, 2]>
// CHECK-NEXT:    hir.wait %[[W20]]
// CHECK-NEXT:    hir.return %b : !fusion.tensor<f32[2 didx, 8], mesh=[1, 2]>
hir.program @scatter_common_device(%a: !fusion.tensor<f32[2, 8], mesh=[0, 2]>) -> !fusion.tensor<f32[2 didx, 8], mesh=[1, 2]> {
  %b = fusion.set %a : !fusion.tensor<f32[2, 8], mesh=[0, 2]> -> !fusion.tensor<f32[2 didx, 8], mesh=[1, 2]>
  hir.return %b : !fusion.tensor<f32[2 didx, 8], mesh=[1, 2]>
}

// -----

// Set, in sharded, out not, same mesh: Allgather over the mesh (CommunicationLowering Allgather).
// CHECK-LABEL: hir.program @allgather(
// CHECK-NEXT:    %b = hir.allocate : !fusion.tensor<f32[2, 8], mesh=[0, 1]>
// CHECK-NEXT:    %[[W30:.+]] = hir.allgather %a -> %b team [0, 1] : !fusion.tensor<f32[2 didx, 8], mesh=[0, 1]> -> !fusion.tensor<f32[2, 8], mesh=[0, 1]>
// CHECK-NEXT:    hir.wait %[[W30]]
// CHECK-NEXT:    hir.return %b : !fusion.tensor<f32[2, 8], mesh=[0, 1]>
hir.program @allgather(%a: !fusion.tensor<f32[2 didx, 8], mesh=[0, 1]>) -> !fusion.tensor<f32[2, 8], mesh=[0, 1]> {
  %b = fusion.set %a : !fusion.tensor<f32[2 didx, 8], mesh=[0, 1]> -> !fusion.tensor<f32[2, 8], mesh=[0, 1]>
  hir.return %b : !fusion.tensor<f32[2, 8], mesh=[0, 1]>
}

// -----

// Allgather_LoopSplit: a 1-D tensor outer-split by the device count.
// CHECK-LABEL: hir.program @allgather_loop_split(
// CHECK-NEXT:    %b = hir.allocate : !fusion.tensor<f32[16], mesh=[0, 1, 2, 3]>
// CHECK-NEXT:    %[[W40:.+]] = hir.allgather %a -> %b team [0, 1, 2, 3] : !fusion.tensor<f32[16(4 didx, 4)], mesh=[0, 1, 2, 3]> -> !fusion.tensor<f32[16], mesh=[0, 1, 2, 3]>
// CHECK-NEXT:    hir.wait %[[W40]]
// CHECK-NEXT:    hir.return %b : !fusion.tensor<f32[16], mesh=[0, 1, 2, 3]>
hir.program @allgather_loop_split(%a: !fusion.tensor<f32[16(4 didx, 4)], mesh=[0, 1, 2, 3]>) -> !fusion.tensor<f32[16], mesh=[0, 1, 2, 3]> {
  %b = fusion.set %a : !fusion.tensor<f32[16(4 didx, 4)], mesh=[0, 1, 2, 3]> -> !fusion.tensor<f32[16], mesh=[0, 1, 2, 3]>
  hir.return %b : !fusion.tensor<f32[16], mesh=[0, 1, 2, 3]>
}

// -----

// A dynamic extent: the destination reads it from the input it is gathered from (hir.extent
// gives the logical extent, whichever rank asks), so it is allocated before the collective.
// CHECK-LABEL: hir.program @allgather_dynamic(
// CHECK-NEXT:    %extent = hir.extent %a axis 0 : !fusion.tensor<f32[?(2 didx, ?), 4], mesh=[0, 1]>
// CHECK-NEXT:    %b = hir.allocate(%extent) : !fusion.tensor<f32[?, 4], mesh=[0, 1]>
// CHECK-NEXT:    %[[WD:.+]] = hir.allgather %a -> %b team [0, 1]
hir.program @allgather_dynamic(%a: !fusion.tensor<f32[?(2 didx, ?), 4], mesh=[0, 1]>) -> !fusion.tensor<f32[?, 4], mesh=[0, 1]> {
  %b = fusion.set %a : !fusion.tensor<f32[?(2 didx, ?), 4], mesh=[0, 1]> -> !fusion.tensor<f32[?, 4], mesh=[0, 1]>
  hir.return %b : !fusion.tensor<f32[?, 4], mesh=[0, 1]>
}

// -----

// A rank of the receiving mesh that is outside the sending one holds no input to read the
// extent from: no extents (the runtime refuses the allocation, on every rank).
// CHECK-LABEL: hir.program @gather_dynamic_to_other_mesh(
// CHECK-NEXT:    %b = hir.allocate : !fusion.tensor<f32[?], mesh=[2]>
hir.program @gather_dynamic_to_other_mesh(%a: !fusion.tensor<f32[?(2 didx, ?)], mesh=[0, 1]>) -> !fusion.tensor<f32[?], mesh=[2]> {
  %b = fusion.set %a : !fusion.tensor<f32[?(2 didx, ?)], mesh=[0, 1]> -> !fusion.tensor<f32[?], mesh=[2]>
  hir.return %b : !fusion.tensor<f32[?], mesh=[2]>
}

// -----

// A whole tensor onto a 2-D mesh: a broadcast to all its devices; the team is a list of
// devices, whatever the mesh's shape.
// CHECK-LABEL: hir.program @broadcast_2d(
// CHECK-NEXT:    %b = hir.allocate : !fusion.tensor<f32[2, 8], mesh=[[0, 1], [2, 3]]>
// CHECK-NEXT:    %{{.+}} = hir.broadcast %a -> %b team [0, 1, 2, 3] root 0
hir.program @broadcast_2d(%a: !fusion.tensor<f32[2, 8], mesh=[0]>) -> !fusion.tensor<f32[2, 8], mesh=[[0, 1], [2, 3]]> {
  %b = fusion.set %a : !fusion.tensor<f32[2, 8], mesh=[0]> -> !fusion.tensor<f32[2, 8], mesh=[[0, 1], [2, 3]]>
  hir.return %b : !fusion.tensor<f32[2, 8], mesh=[[0, 1], [2, 3]]>
}

// -----

// The root is a sender that also receives: onto a mesh within the sending one, a team of
// one (a local copy); onto an overlapping mesh, the devices of the receiving mesh alone.
// CHECK-LABEL: hir.program @broadcast_within(
// CHECK:         hir.broadcast %a -> %b team [1] root 1
// CHECK:         hir.broadcast %a -> %c team [2, 3] root 2
hir.program @broadcast_within(%a: !fusion.tensor<f32[2, 8], mesh=[0, 1, 2]>) -> (!fusion.tensor<f32[2, 8], mesh=[1]>, !fusion.tensor<f32[2, 8], mesh=[2, 3]>) {
  %b = fusion.set %a : !fusion.tensor<f32[2, 8], mesh=[0, 1, 2]> -> !fusion.tensor<f32[2, 8], mesh=[1]>
  %c = fusion.set %a : !fusion.tensor<f32[2, 8], mesh=[0, 1, 2]> -> !fusion.tensor<f32[2, 8], mesh=[2, 3]>
  hir.return %b, %c : !fusion.tensor<f32[2, 8], mesh=[1]>, !fusion.tensor<f32[2, 8], mesh=[2, 3]>
}

// -----

// Every rank of the receiving mesh is in the sending one, so each reads the extent from the
// input it holds before the broadcast from the first device.
// CHECK-LABEL: hir.program @broadcast_dynamic_to_inner_mesh(
// CHECK-NEXT:    %extent = hir.extent %a axis 0 : !fusion.tensor<f32[?], mesh=[0, 1, 2, 3]>
// CHECK-NEXT:    %b = hir.allocate(%extent) : !fusion.tensor<f32[?], mesh=[0, 1]>
// CHECK-NEXT:    %{{.+}} = hir.broadcast %a -> %b team [0, 1] root 0
hir.program @broadcast_dynamic_to_inner_mesh(%a: !fusion.tensor<f32[?], mesh=[0, 1, 2, 3]>) -> !fusion.tensor<f32[?], mesh=[0, 1]> {
  %b = fusion.set %a : !fusion.tensor<f32[?], mesh=[0, 1, 2, 3]> -> !fusion.tensor<f32[?], mesh=[0, 1]>
  hir.return %b : !fusion.tensor<f32[?], mesh=[0, 1]>
}

// -----

// 2-D mesh: the team is the DIDx slice of the rank (its mesh row), one allgather whatever
// the number of rows; each rank takes part in its row's.
// CHECK-LABEL: hir.program @allgather_2d(
// CHECK-NEXT:    %b = hir.allocate : !fusion.tensor<f32[2 didy, 2, 8], mesh=[[0, 1], [2, 3]]>
// CHECK-NEXT:    %[[W50:.+]] = hir.allgather %a -> %b team [[0, 1], [2, 3]] along didx : !fusion.tensor<f32[2 didy, 2 didx, 8], mesh=[[0, 1], [2, 3]]> -> !fusion.tensor<f32[2 didy, 2, 8], mesh=[[0, 1], [2, 3]]>
// CHECK-NEXT:    hir.wait %[[W50]]
// CHECK-NEXT:    hir.return %b : !fusion.tensor<f32[2 didy, 2, 8], mesh=[[0, 1], [2, 3]]>
hir.program @allgather_2d(%a: !fusion.tensor<f32[2 didy, 2 didx, 8], mesh=[[0, 1], [2, 3]]>) -> !fusion.tensor<f32[2 didy, 2, 8], mesh=[[0, 1], [2, 3]]> {
  %b = fusion.set %a : !fusion.tensor<f32[2 didy, 2 didx, 8], mesh=[[0, 1], [2, 3]]> -> !fusion.tensor<f32[2 didy, 2, 8], mesh=[[0, 1], [2, 3]]>
  hir.return %b : !fusion.tensor<f32[2 didy, 2, 8], mesh=[[0, 1], [2, 3]]>
}

// -----

// DIDy changes along the columns of a 2-D mesh: the team is the rank's DIDy slice (column).
// CHECK-LABEL: hir.program @allgather_didy(
// CHECK-NEXT:    %b = hir.allocate : !fusion.tensor<f32[2, 2 didx, 8], mesh=[[0, 1], [2, 3]]>
// CHECK-NEXT:    %[[W:.+]] = hir.allgather %a -> %b team [[0, 1], [2, 3]] along didy : !fusion.tensor<f32[2 didy, 2 didx, 8], mesh=[[0, 1], [2, 3]]> -> !fusion.tensor<f32[2, 2 didx, 8], mesh=[[0, 1], [2, 3]]>
// CHECK-NEXT:    hir.wait %[[W]]
// CHECK-NEXT:    hir.return %b
hir.program @allgather_didy(%a: !fusion.tensor<f32[2 didy, 2 didx, 8], mesh=[[0, 1], [2, 3]]>) -> !fusion.tensor<f32[2, 2 didx, 8], mesh=[[0, 1], [2, 3]]> {
  %b = fusion.set %a : !fusion.tensor<f32[2 didy, 2 didx, 8], mesh=[[0, 1], [2, 3]]> -> !fusion.tensor<f32[2, 2 didx, 8], mesh=[[0, 1], [2, 3]]>
  hir.return %b : !fusion.tensor<f32[2, 2 didx, 8], mesh=[[0, 1], [2, 3]]>
}

// -----

// Reductions along DIDy: allreduce and reduce_scatter on each column.
// CHECK-LABEL: hir.program @reduce_didy(
// CHECK-NEXT:    %s = hir.allocate : !fusion.tensor<f32[r2, 2 didx, 8], mesh=[[0, 1], [2, 3]]>
// CHECK-NEXT:    %[[W1:.+]] = hir.allreduce %a -> %s team [[0, 1], [2, 3]] along didy op sum
// CHECK-NEXT:    hir.wait %[[W1]]
// CHECK-NEXT:    %r = hir.allocate : !fusion.tensor<f32[r2, 2 didx, 8(2 didy, 4)], mesh=[[0, 1], [2, 3]]>
// CHECK-NEXT:    %[[W3:.+]] = hir.reduce_scatter %a -> %r team [[0, 1], [2, 3]] along didy op max
// CHECK-NEXT:    hir.wait %[[W3]]
hir.program @reduce_didy(%a: !fusion.tensor<f32[2 didy, 2 didx, 8], mesh=[[0, 1], [2, 3]]>) -> (!fusion.tensor<f32[r2, 2 didx, 8], mesh=[[0, 1], [2, 3]]>, !fusion.tensor<f32[r2, 2 didx, 8(2 didy, 4)], mesh=[[0, 1], [2, 3]]>) {
  %s = fusion.reduce sum %a dims [0] : !fusion.tensor<f32[2 didy, 2 didx, 8], mesh=[[0, 1], [2, 3]]> -> !fusion.tensor<f32[r2, 2 didx, 8], mesh=[[0, 1], [2, 3]]>
  %r = fusion.reduce max %a dims [0] : !fusion.tensor<f32[2 didy, 2 didx, 8], mesh=[[0, 1], [2, 3]]> -> !fusion.tensor<f32[r2, 2 didx, 8(2 didy, 4)], mesh=[[0, 1], [2, 3]]>
  hir.return %s, %r : !fusion.tensor<f32[r2, 2 didx, 8], mesh=[[0, 1], [2, 3]]>, !fusion.tensor<f32[r2, 2 didx, 8(2 didy, 4)], mesh=[[0, 1], [2, 3]]>
}

// -----

// DIDy on the piece behind a DIDx piece that both sides share: each device's part is a block
// of its DIDx block, the same on both sides, so the column gathers within that block as if
// the axis were the block alone (nvFuser's 2-D sharded axis, `outer_split` twice).
// CHECK-LABEL: hir.program @allgather_didy_behind_didx(
// CHECK-NEXT:    %b = hir.allocate : !fusion.tensor<f32[8(2 didx, 4), 3], mesh=[[0, 1], [2, 3]]>
// CHECK-NEXT:    %[[W:.+]] = hir.allgather %a -> %b team [[0, 1], [2, 3]] along didy : !fusion.tensor<f32[8(2 didx, 2 didy, 2), 3], mesh=[[0, 1], [2, 3]]> -> !fusion.tensor<f32[8(2 didx, 4), 3], mesh=[[0, 1], [2, 3]]>
// CHECK-NEXT:    hir.wait %[[W]]
// CHECK-NEXT:    hir.return %b
hir.program @allgather_didy_behind_didx(%a: !fusion.tensor<f32[8(2 didx, 2 didy, 2), 3], mesh=[[0, 1], [2, 3]]>) -> !fusion.tensor<f32[8(2 didx, 4), 3], mesh=[[0, 1], [2, 3]]> {
  %b = fusion.set %a : !fusion.tensor<f32[8(2 didx, 2 didy, 2), 3], mesh=[[0, 1], [2, 3]]> -> !fusion.tensor<f32[8(2 didx, 4), 3], mesh=[[0, 1], [2, 3]]>
  hir.return %b : !fusion.tensor<f32[8(2 didx, 4), 3], mesh=[[0, 1], [2, 3]]>
}

// -----

// Sharding a replicated tensor within one 2-D mesh: each device keeps its part of its own
// copy, one local shard for every column; nothing moves, nothing is waited (nvFuser scatters).
// CHECK-LABEL: hir.program @scatter_didy_same_mesh(
// CHECK-NEXT:    %b = hir.allocate
// CHECK-NEXT:    hir.local_shard %a -> %b axis 0 team {{\[\[}}0, 1], [2, 3]] along didy :
// CHECK-NEXT:    hir.return %b
hir.program @scatter_didy_same_mesh(%a: !fusion.tensor<f32[2, 2 didx, 8], mesh=[[0, 1], [2, 3]]>) -> !fusion.tensor<f32[2 didy, 2 didx, 8], mesh=[[0, 1], [2, 3]]> {
  %b = fusion.set %a : !fusion.tensor<f32[2, 2 didx, 8], mesh=[[0, 1], [2, 3]]> -> !fusion.tensor<f32[2 didy, 2 didx, 8], mesh=[[0, 1], [2, 3]]>
  hir.return %b : !fusion.tensor<f32[2 didy, 2 didx, 8], mesh=[[0, 1], [2, 3]]>
}

// -----

// Set, both sharded on different axes of one mesh: AllToAll ([D(i0), i1] -> [i0, D(i1)]).
// The input's chunk j (its axis 1's part j) goes to member j, which receives member i's
// part at its axis 0's position i.
// CHECK-LABEL: hir.program @all_to_all(
// CHECK-NEXT:    %b = hir.allocate : !fusion.tensor<f32[2, 8(2 didx, 4)], mesh=[0, 1]>
// CHECK-NEXT:    %[[W:.+]] = hir.all_to_all %a -> %b team [0, 1] : !fusion.tensor<f32[2 didx, 8], mesh=[0, 1]> -> !fusion.tensor<f32[2, 8(2 didx, 4)], mesh=[0, 1]>
// CHECK-NEXT:    hir.wait %[[W]]
// CHECK-NEXT:    hir.return %b
hir.program @all_to_all(%a: !fusion.tensor<f32[2 didx, 8], mesh=[0, 1]>) -> !fusion.tensor<f32[2, 8(2 didx, 4)], mesh=[0, 1]> {
  %b = fusion.set %a : !fusion.tensor<f32[2 didx, 8], mesh=[0, 1]> -> !fusion.tensor<f32[2, 8(2 didx, 4)], mesh=[0, 1]>
  hir.return %b : !fusion.tensor<f32[2, 8(2 didx, 4)], mesh=[0, 1]>
}

// -----

// The set decompose-reshardings puts before reshape([2, 4(2 didx, 2)] -> [8(2 didx, 4)]):
// rows become sharded instead of columns, an all-to-all whose axes are laid out as needed.
// CHECK-LABEL: hir.program @all_to_all_of_a_reshape(
// CHECK-NEXT:    %b = hir.allocate : !fusion.tensor<f32[2 didx, 4], mesh=[0, 1]>
// CHECK-NEXT:    %[[W:.+]] = hir.all_to_all %a -> %b team [0, 1]
// CHECK-NEXT:    hir.wait %[[W]]
hir.program @all_to_all_of_a_reshape(%a: !fusion.tensor<f32[2, 4(2 didx, 2)], mesh=[0, 1]>) -> !fusion.tensor<f32[2 didx, 4], mesh=[0, 1]> {
  %b = fusion.set %a : !fusion.tensor<f32[2, 4(2 didx, 2)], mesh=[0, 1]> -> !fusion.tensor<f32[2 didx, 4], mesh=[0, 1]>
  hir.return %b : !fusion.tensor<f32[2 didx, 4], mesh=[0, 1]>
}

// -----

// All-to-all along DIDx on a 2-D mesh, on each row; and along DIDy, on each column.
// CHECK-LABEL: hir.program @all_to_all_2d(
// CHECK-NEXT:    %b = hir.allocate
// CHECK-NEXT:    %[[W1:.+]] = hir.all_to_all %a -> %b team [[0, 1], [2, 3]] along didx
// CHECK-NEXT:    hir.wait %[[W1]]
// CHECK-NEXT:    %c = hir.allocate
// CHECK-NEXT:    %[[W3:.+]] = hir.all_to_all %b -> %c team [[0, 1], [2, 3]] along didy
// CHECK-NEXT:    hir.wait %[[W3]]
hir.program @all_to_all_2d(%a: !fusion.tensor<f32[2 didy, 2 didx, 4], mesh=[[0, 1], [2, 3]]>) -> !fusion.tensor<f32[2, 2 didy, 4(2 didx, 2)], mesh=[[0, 1], [2, 3]]> {
  %b = fusion.set %a : !fusion.tensor<f32[2 didy, 2 didx, 4], mesh=[[0, 1], [2, 3]]> -> !fusion.tensor<f32[2 didy, 2, 4(2 didx, 2)], mesh=[[0, 1], [2, 3]]>
  %c = fusion.set %b : !fusion.tensor<f32[2 didy, 2, 4(2 didx, 2)], mesh=[[0, 1], [2, 3]]> -> !fusion.tensor<f32[2, 2 didy, 4(2 didx, 2)], mesh=[[0, 1], [2, 3]]>
  hir.return %c : !fusion.tensor<f32[2, 2 didy, 4(2 didx, 2)], mesh=[[0, 1], [2, 3]]>
}

// -----

// Set, in sharded, out not, different mesh: Gather, one per receiving device (LowerGatherTest {0,1}->{0}).
// CHECK-LABEL: hir.program @gather_to_0(
// CHECK-NEXT:    %b = hir.allocate : !fusion.tensor<f32[2, 8], mesh=[0]>
// CHECK-NEXT:    %[[W60:.+]] = hir.gather %a -> %b team [0, 1] root 0 : !fusion.tensor<f32[2 didx, 8], mesh=[0, 1]> -> !fusion.tensor<f32[2, 8], mesh=[0]>
// CHECK-NEXT:    hir.wait %[[W60]]
// CHECK-NEXT:    hir.return %b : !fusion.tensor<f32[2, 8], mesh=[0]>
hir.program @gather_to_0(%a: !fusion.tensor<f32[2 didx, 8], mesh=[0, 1]>) -> !fusion.tensor<f32[2, 8], mesh=[0]> {
  %b = fusion.set %a : !fusion.tensor<f32[2 didx, 8], mesh=[0, 1]> -> !fusion.tensor<f32[2, 8], mesh=[0]>
  hir.return %b : !fusion.tensor<f32[2, 8], mesh=[0]>
}

// -----

// LowerGatherTest {0,1}->{1}.
// CHECK-LABEL: hir.program @gather_to_1(
// CHECK-NEXT:    %b = hir.allocate : !fusion.tensor<f32[2, 8], mesh=[1]>
// CHECK-NEXT:    %[[W70:.+]] = hir.gather %a -> %b team [0, 1] root 1 : !fusion.tensor<f32[2 didx, 8], mesh=[0, 1]> -> !fusion.tensor<f32[2, 8], mesh=[1]>
// CHECK-NEXT:    hir.wait %[[W70]]
// CHECK-NEXT:    hir.return %b : !fusion.tensor<f32[2, 8], mesh=[1]>
hir.program @gather_to_1(%a: !fusion.tensor<f32[2 didx, 8], mesh=[0, 1]>) -> !fusion.tensor<f32[2, 8], mesh=[1]> {
  %b = fusion.set %a : !fusion.tensor<f32[2 didx, 8], mesh=[0, 1]> -> !fusion.tensor<f32[2, 8], mesh=[1]>
  hir.return %b : !fusion.tensor<f32[2, 8], mesh=[1]>
}

// -----

// LowerGatherTest {1,2}->{0,2}: two gathers; root 0 is not a sender, so it joins the team last.
// CHECK-LABEL: hir.program @gather_two_roots(
// CHECK-NEXT:    %b = hir.allocate : !fusion.tensor<f32[2, 8], mesh=[0, 2]>
// CHECK-NEXT:    %[[W80:.+]] = hir.gather %a -> %b team [1, 2, 0] root 0 : !fusion.tensor<f32[2 didx, 8], mesh=[1, 2]> -> !fusion.tensor<f32[2, 8], mesh=[0, 2]>
// CHECK-NEXT:    hir.wait %[[W80]]
// CHECK-NEXT:    %[[W81:.+]] = hir.gather %a -> %b team [1, 2] root 2 : !fusion.tensor<f32[2 didx, 8], mesh=[1, 2]> -> !fusion.tensor<f32[2, 8], mesh=[0, 2]>
// CHECK-NEXT:    hir.wait %[[W81]]
// CHECK-NEXT:    hir.return %b : !fusion.tensor<f32[2, 8], mesh=[0, 2]>
hir.program @gather_two_roots(%a: !fusion.tensor<f32[2 didx, 8], mesh=[1, 2]>) -> !fusion.tensor<f32[2, 8], mesh=[0, 2]> {
  %b = fusion.set %a : !fusion.tensor<f32[2 didx, 8], mesh=[1, 2]> -> !fusion.tensor<f32[2, 8], mesh=[0, 2]>
  hir.return %b : !fusion.tensor<f32[2, 8], mesh=[0, 2]>
}

// -----

// Set, both sharded: SendRecv pairs sender_mesh[i] -> receiver_mesh[i] (LowerSendRecvTest {1,2}->{0,1}).
// CHECK-LABEL: hir.program @send_recv(
// CHECK-NEXT:    %b = hir.allocate : !fusion.tensor<f32[2 didx, 8], mesh=[0, 1]>
// CHECK-NEXT:    %[[W90:.+]] = hir.send_recv %a -> %b team [1, 0] root 1 : !fusion.tensor<f32[2 didx, 8], mesh=[1, 2]> -> !fusion.tensor<f32[2 didx, 8], mesh=[0, 1]>
// CHECK-NEXT:    hir.wait %[[W90]]
// CHECK-NEXT:    %[[W91:.+]] = hir.send_recv %a -> %b team [2, 1] root 2 : !fusion.tensor<f32[2 didx, 8], mesh=[1, 2]> -> !fusion.tensor<f32[2 didx, 8], mesh=[0, 1]>
// CHECK-NEXT:    hir.wait %[[W91]]
// CHECK-NEXT:    hir.return %b : !fusion.tensor<f32[2 didx, 8], mesh=[0, 1]>
hir.program @send_recv(%a: !fusion.tensor<f32[2 didx, 8], mesh=[1, 2]>) -> !fusion.tensor<f32[2 didx, 8], mesh=[0, 1]> {
  %b = fusion.set %a : !fusion.tensor<f32[2 didx, 8], mesh=[1, 2]> -> !fusion.tensor<f32[2 didx, 8], mesh=[0, 1]>
  hir.return %b : !fusion.tensor<f32[2 didx, 8], mesh=[0, 1]>
}

// -----

// LowerSendRecvTest {1,2}->{1,0}: device 1 keeps its shard (a team of one: a local copy).
// CHECK-LABEL: hir.program @send_recv_to_self(
// CHECK-NEXT:    %b = hir.allocate : !fusion.tensor<f32[2 didx, 8], mesh=[1, 0]>
// CHECK-NEXT:    %[[W100:.+]] = hir.send_recv %a -> %b team [1] root 1 : !fusion.tensor<f32[2 didx, 8], mesh=[1, 2]> -> !fusion.tensor<f32[2 didx, 8], mesh=[1, 0]>
// CHECK-NEXT:    hir.wait %[[W100]]
// CHECK-NEXT:    %[[W101:.+]] = hir.send_recv %a -> %b team [2, 0] root 2 : !fusion.tensor<f32[2 didx, 8], mesh=[1, 2]> -> !fusion.tensor<f32[2 didx, 8], mesh=[1, 0]>
// CHECK-NEXT:    hir.wait %[[W101]]
// CHECK-NEXT:    hir.return %b : !fusion.tensor<f32[2 didx, 8], mesh=[1, 0]>
hir.program @send_recv_to_self(%a: !fusion.tensor<f32[2 didx, 8], mesh=[1, 2]>) -> !fusion.tensor<f32[2 didx, 8], mesh=[1, 0]> {
  %b = fusion.set %a : !fusion.tensor<f32[2 didx, 8], mesh=[1, 2]> -> !fusion.tensor<f32[2 didx, 8], mesh=[1, 0]>
  hir.return %b : !fusion.tensor<f32[2 didx, 8], mesh=[1, 0]>
}

// -----

// LowerSendRecvTest {0}->{1}: meshes of one device are not sharded, so the table gives a Broadcast.
// CHECK-LABEL: hir.program @send_recv_single_devices(
// CHECK-NEXT:    %b = hir.allocate : !fusion.tensor<f32[1 didx, 8], mesh=[1]>
// CHECK-NEXT:    %[[W110:.+]] = hir.broadcast %a -> %b team [1, 0] root 0 : !fusion.tensor<f32[1 didx, 8], mesh=[0]> -> !fusion.tensor<f32[1 didx, 8], mesh=[1]>
// CHECK-NEXT:    hir.wait %[[W110]]
// CHECK-NEXT:    hir.return %b : !fusion.tensor<f32[1 didx, 8], mesh=[1]>
hir.program @send_recv_single_devices(%a: !fusion.tensor<f32[1 didx, 8], mesh=[0]>) -> !fusion.tensor<f32[1 didx, 8], mesh=[1]> {
  %b = fusion.set %a : !fusion.tensor<f32[1 didx, 8], mesh=[0]> -> !fusion.tensor<f32[1 didx, 8], mesh=[1]>
  hir.return %b : !fusion.tensor<f32[1 didx, 8], mesh=[1]>
}

// -----

// LowerSendRecvTest {1}->{0}.
// CHECK-LABEL: hir.program @send_recv_single_devices_back(
// CHECK-NEXT:    %b = hir.allocate : !fusion.tensor<f32[1 didx, 8], mesh=[0]>
// CHECK-NEXT:    %[[W120:.+]] = hir.broadcast %a -> %b team [0, 1] root 1 : !fusion.tensor<f32[1 didx, 8], mesh=[1]> -> !fusion.tensor<f32[1 didx, 8], mesh=[0]>
// CHECK-NEXT:    hir.wait %[[W120]]
// CHECK-NEXT:    hir.return %b : !fusion.tensor<f32[1 didx, 8], mesh=[0]>
hir.program @send_recv_single_devices_back(%a: !fusion.tensor<f32[1 didx, 8], mesh=[1]>) -> !fusion.tensor<f32[1 didx, 8], mesh=[0]> {
  %b = fusion.set %a : !fusion.tensor<f32[1 didx, 8], mesh=[1]> -> !fusion.tensor<f32[1 didx, 8], mesh=[0]>
  hir.return %b : !fusion.tensor<f32[1 didx, 8], mesh=[0]>
}

// -----

// Set, neither sharded, different meshes: Broadcast from sender_mesh[0] (CommunicationLowering Broadcast {0} -> all).
// CHECK-LABEL: hir.program @broadcast(
// CHECK-NEXT:    %b = hir.allocate : !fusion.tensor<f32[2, 8], mesh=[0, 1, 2, 3]>
// CHECK-NEXT:    %[[W130:.+]] = hir.broadcast %a -> %b team [0, 1, 2, 3] root 0 : !fusion.tensor<f32[2, 8], mesh=[0]> -> !fusion.tensor<f32[2, 8], mesh=[0, 1, 2, 3]>
// CHECK-NEXT:    hir.wait %[[W130]]
// CHECK-NEXT:    hir.return %b : !fusion.tensor<f32[2, 8], mesh=[0, 1, 2, 3]>
hir.program @broadcast(%a: !fusion.tensor<f32[2, 8], mesh=[0]>) -> !fusion.tensor<f32[2, 8], mesh=[0, 1, 2, 3]> {
  %b = fusion.set %a : !fusion.tensor<f32[2, 8], mesh=[0]> -> !fusion.tensor<f32[2, 8], mesh=[0, 1, 2, 3]>
  hir.return %b : !fusion.tensor<f32[2, 8], mesh=[0, 1, 2, 3]>
}

// -----

// Reduce, in sharded, out sharded, same mesh: ReduceScatter.
// CHECK-LABEL: hir.program @reduce_scatter(
// CHECK-NEXT:    %b = hir.allocate : !fusion.tensor<f32[r2, 8(2 didx, 4)], mesh=[0, 1]>
// CHECK-NEXT:    %[[W140:.+]] = hir.reduce_scatter %a -> %b team [0, 1] op sum : !fusion.tensor<f32[2 didx, 8], mesh=[0, 1]> -> !fusion.tensor<f32[r2, 8(2 didx, 4)], mesh=[0, 1]>
// CHECK-NEXT:    hir.wait %[[W140]]
// CHECK-NEXT:    hir.return %b : !fusion.tensor<f32[r2, 8(2 didx, 4)], mesh=[0, 1]>
hir.program @reduce_scatter(%a: !fusion.tensor<f32[2 didx, 8], mesh=[0, 1]>) -> !fusion.tensor<f32[r2, 8(2 didx, 4)], mesh=[0, 1]> {
  %b = fusion.reduce sum %a dims [0] : !fusion.tensor<f32[2 didx, 8], mesh=[0, 1]> -> !fusion.tensor<f32[r2, 8(2 didx, 4)], mesh=[0, 1]>
  hir.return %b : !fusion.tensor<f32[r2, 8(2 didx, 4)], mesh=[0, 1]>
}

// -----

// ReduceScatter on a 2-D mesh: on each DIDx slice (mesh row).
// CHECK-LABEL: hir.program @reduce_scatter_2d(
// CHECK-NEXT:    %b = hir.allocate : !fusion.tensor<f32[2 didy, r2, 8(2 didx, 4)], mesh=[[0, 1], [2, 3]]>
// CHECK-NEXT:    %[[W150:.+]] = hir.reduce_scatter %a -> %b team [[0, 1], [2, 3]] along didx op sum : !fusion.tensor<f32[2 didy, 2 didx, 8], mesh=[[0, 1], [2, 3]]> -> !fusion.tensor<f32[2 didy, r2, 8(2 didx, 4)], mesh=[[0, 1], [2, 3]]>
// CHECK-NEXT:    hir.wait %[[W150]]
// CHECK-NEXT:    hir.return %b : !fusion.tensor<f32[2 didy, r2, 8(2 didx, 4)], mesh=[[0, 1], [2, 3]]>
hir.program @reduce_scatter_2d(%a: !fusion.tensor<f32[2 didy, 2 didx, 8], mesh=[[0, 1], [2, 3]]>) -> !fusion.tensor<f32[2 didy, r2, 8(2 didx, 4)], mesh=[[0, 1], [2, 3]]> {
  %b = fusion.reduce sum %a dims [1] : !fusion.tensor<f32[2 didy, 2 didx, 8], mesh=[[0, 1], [2, 3]]> -> !fusion.tensor<f32[2 didy, r2, 8(2 didx, 4)], mesh=[[0, 1], [2, 3]]>
  hir.return %b : !fusion.tensor<f32[2 didy, r2, 8(2 didx, 4)], mesh=[[0, 1], [2, 3]]>
}

// -----

// Reduce, in sharded, out not, same mesh: Allreduce.
// CHECK-LABEL: hir.program @allreduce(
// CHECK-NEXT:    %b = hir.allocate : !fusion.tensor<f32[r2, 8], mesh=[0, 1]>
// CHECK-NEXT:    %[[W160:.+]] = hir.allreduce %a -> %b team [0, 1] op sum : !fusion.tensor<f32[2 didx, 8], mesh=[0, 1]> -> !fusion.tensor<f32[r2, 8], mesh=[0, 1]>
// CHECK-NEXT:    hir.wait %[[W160]]
// CHECK-NEXT:    hir.return %b : !fusion.tensor<f32[r2, 8], mesh=[0, 1]>
hir.program @allreduce(%a: !fusion.tensor<f32[2 didx, 8], mesh=[0, 1]>) -> !fusion.tensor<f32[r2, 8], mesh=[0, 1]> {
  %b = fusion.reduce sum %a dims [0] : !fusion.tensor<f32[2 didx, 8], mesh=[0, 1]> -> !fusion.tensor<f32[r2, 8], mesh=[0, 1]>
  hir.return %b : !fusion.tensor<f32[r2, 8], mesh=[0, 1]>
}

// -----

// The reduced axis may keep its DIDx marker in the result: still an Allreduce; reduction kinds carry over.
// CHECK-LABEL: hir.program @allreduce_keeps_axis_parallel(
// CHECK-NEXT:    %b = hir.allocate : !fusion.tensor<f32[8, r4 didx], mesh=[0, 1, 2, 3]>
// CHECK-NEXT:    %[[W170:.+]] = hir.allreduce %a -> %b team [0, 1, 2, 3] op max : !fusion.tensor<f32[8, 4 didx], mesh=[0, 1, 2, 3]> -> !fusion.tensor<f32[8, r4 didx], mesh=[0, 1, 2, 3]>
// CHECK-NEXT:    hir.wait %[[W170]]
// CHECK-NEXT:    hir.return %b : !fusion.tensor<f32[8, r4 didx], mesh=[0, 1, 2, 3]>
hir.program @allreduce_keeps_axis_parallel(%a: !fusion.tensor<f32[8, 4 didx], mesh=[0, 1, 2, 3]>) -> !fusion.tensor<f32[8, r4 didx], mesh=[0, 1, 2, 3]> {
  %b = fusion.reduce max %a dims [1] : !fusion.tensor<f32[8, 4 didx], mesh=[0, 1, 2, 3]> -> !fusion.tensor<f32[8, r4 didx], mesh=[0, 1, 2, 3]>
  hir.return %b : !fusion.tensor<f32[8, r4 didx], mesh=[0, 1, 2, 3]>
}

// -----

// Allreduce on a 2-D mesh: on each DIDx slice; kind prod.
// CHECK-LABEL: hir.program @allreduce_2d(
// CHECK-NEXT:    %b = hir.allocate : !fusion.tensor<f32[2 didy, r2, 8], mesh=[[0, 1], [2, 3]]>
// CHECK-NEXT:    %[[W180:.+]] = hir.allreduce %a -> %b team [[0, 1], [2, 3]] along didx op prod : !fusion.tensor<f32[2 didy, 2 didx, 8], mesh=[[0, 1], [2, 3]]> -> !fusion.tensor<f32[2 didy, r2, 8], mesh=[[0, 1], [2, 3]]>
// CHECK-NEXT:    hir.wait %[[W180]]
// CHECK-NEXT:    hir.return %b : !fusion.tensor<f32[2 didy, r2, 8], mesh=[[0, 1], [2, 3]]>
hir.program @allreduce_2d(%a: !fusion.tensor<f32[2 didy, 2 didx, 8], mesh=[[0, 1], [2, 3]]>) -> !fusion.tensor<f32[2 didy, r2, 8], mesh=[[0, 1], [2, 3]]> {
  %b = fusion.reduce prod %a dims [1] : !fusion.tensor<f32[2 didy, 2 didx, 8], mesh=[[0, 1], [2, 3]]> -> !fusion.tensor<f32[2 didy, r2, 8], mesh=[[0, 1], [2, 3]]>
  hir.return %b : !fusion.tensor<f32[2 didy, r2, 8], mesh=[[0, 1], [2, 3]]>
}

// -----

// Reduce, in sharded, out not, different mesh: Reduce, one per root (CommunicationLowering Reduce, out mesh {0}); kind min.
// CHECK-LABEL: hir.program @reduce(
// CHECK-NEXT:    %b = hir.allocate : !fusion.tensor<f32[r2, 8], mesh=[0]>
// CHECK-NEXT:    %[[W190:.+]] = hir.reduce %a -> %b team [0, 1] root 0 op min : !fusion.tensor<f32[2 didx, 8], mesh=[0, 1]> -> !fusion.tensor<f32[r2, 8], mesh=[0]>
// CHECK-NEXT:    hir.wait %[[W190]]
// CHECK-NEXT:    hir.return %b : !fusion.tensor<f32[r2, 8], mesh=[0]>
hir.program @reduce(%a: !fusion.tensor<f32[2 didx, 8], mesh=[0, 1]>) -> !fusion.tensor<f32[r2, 8], mesh=[0]> {
  %b = fusion.reduce min %a dims [0] : !fusion.tensor<f32[2 didx, 8], mesh=[0, 1]> -> !fusion.tensor<f32[r2, 8], mesh=[0]>
  hir.return %b : !fusion.tensor<f32[r2, 8], mesh=[0]>
}

// -----

// Reduce to a mesh of two devices, one of them outside the sender mesh: two reduces, that root joins the team.
// CHECK-LABEL: hir.program @reduce_two_roots(
// CHECK-NEXT:    %b = hir.allocate : !fusion.tensor<f32[r2, 8], mesh=[1, 2]>
// CHECK-NEXT:    %[[W200:.+]] = hir.reduce %a -> %b team [0, 1] root 1 op sum : !fusion.tensor<f32[2 didx, 8], mesh=[0, 1]> -> !fusion.tensor<f32[r2, 8], mesh=[1, 2]>
// CHECK-NEXT:    hir.wait %[[W200]]
// CHECK-NEXT:    %[[W201:.+]] = hir.reduce %a -> %b team [0, 1, 2] root 2 op sum : !fusion.tensor<f32[2 didx, 8], mesh=[0, 1]> -> !fusion.tensor<f32[r2, 8], mesh=[1, 2]>
// CHECK-NEXT:    hir.wait %[[W201]]
// CHECK-NEXT:    hir.return %b : !fusion.tensor<f32[r2, 8], mesh=[1, 2]>
hir.program @reduce_two_roots(%a: !fusion.tensor<f32[2 didx, 8], mesh=[0, 1]>) -> !fusion.tensor<f32[r2, 8], mesh=[1, 2]> {
  %b = fusion.reduce sum %a dims [0] : !fusion.tensor<f32[2 didx, 8], mesh=[0, 1]> -> !fusion.tensor<f32[r2, 8], mesh=[1, 2]>
  hir.return %b : !fusion.tensor<f32[r2, 8], mesh=[1, 2]>
}

// -----
// A destination given by the op is written by the collective; no allocation. A set
// that does not reshard stays a local copy, and kernel units are left alone.
// CHECK-LABEL: hir.program @into_destination(
// CHECK-NEXT:    %d = hir.allocate : !fusion.tensor<f32[2, 8], mesh=[0, 1]>
// CHECK-NEXT:    %[[W:.+]] = hir.allgather %a -> %d team [0, 1]
// CHECK-NEXT:    hir.wait %[[W]]
// CHECK-NEXT:    %c = fusion.set %d : !fusion.tensor<f32[2, 8], mesh=[0, 1]> -> !fusion.tensor<f32[2, 8], mesh=[0, 1]>
// CHECK-NEXT:    %e = hir.post_on_stream @unit(%c)
// CHECK-NEXT:    hir.return %e
// CHECK:       fusion.func @unit(
// CHECK-NEXT:    fusion.relu
hir.program @into_destination(%a: !fusion.tensor<f32[2 didx, 8], mesh=[0, 1]>) -> !fusion.tensor<f32[2, 8], mesh=[0, 1]> {
  %d = hir.allocate : !fusion.tensor<f32[2, 8], mesh=[0, 1]>
  %b = fusion.set %a into %d : !fusion.tensor<f32[2 didx, 8], mesh=[0, 1]> -> !fusion.tensor<f32[2, 8], mesh=[0, 1]>
  %c = fusion.set %b : !fusion.tensor<f32[2, 8], mesh=[0, 1]> -> !fusion.tensor<f32[2, 8], mesh=[0, 1]>
  %e = hir.post_on_stream @unit(%c) : (!fusion.tensor<f32[2, 8], mesh=[0, 1]>) -> !fusion.tensor<f32[2, 8], mesh=[0, 1]>
  hir.return %e : !fusion.tensor<f32[2, 8], mesh=[0, 1]>
}
fusion.func @unit(%x: !fusion.tensor<f32[2, 8], mesh=[0, 1]>) -> !fusion.tensor<f32[2, 8], mesh=[0, 1]> {
  %y = fusion.relu %x : !fusion.tensor<f32[2, 8], mesh=[0, 1]> -> !fusion.tensor<f32[2, 8], mesh=[0, 1]>
  fusion.return %y : !fusion.tensor<f32[2, 8], mesh=[0, 1]>
}

// -----

// Inside stream loops (at any depth) the destination is an hir.alias_select view: the
// collective writes into it, each followed by its wait, and the loop body keeps its order.
// A resharding op without destination in a loop gets its allocation in the loop body.
// CHECK-LABEL: hir.program @in_loops(
// CHECK:         %out = hir.allocate : !fusion.tensor<f32[4, 2, 8], mesh=[0, 1]>
// CHECK:         scf.for %i = %c0 to %c4 step %c1 {
// CHECK-NEXT:      %av = hir.alias_select %a[%i] axis 0
// CHECK-NEXT:      %ov = hir.alias_select %out[%i] axis 0
// CHECK-NEXT:      %[[W1:.+]] = hir.allgather %av -> %ov team [0, 1] : !fusion.tensor<f32[2 didx, 8], mesh=[0, 1]> -> !fusion.tensor<f32[2, 8], mesh=[0, 1]>
// CHECK-NEXT:      hir.wait %[[W1]]
// CHECK-NEXT:      scf.for %j = %c0 to %c2 step %c1 {
// CHECK-NEXT:        %s = hir.allocate : !fusion.tensor<f32[r2, 8], mesh=[0, 1]>
// CHECK-NEXT:        %[[W2:.+]] = hir.allreduce %av -> %s team [0, 1] op sum
// CHECK-NEXT:        hir.wait %[[W2]]
// CHECK-NEXT:        %e = fusion.exp %s : !fusion.tensor<f32[r2, 8], mesh=[0, 1]> -> !fusion.tensor<f32[8], mesh=[0, 1]>
// CHECK-NEXT:      }
// CHECK-NEXT:    }
hir.program @in_loops(%a: !fusion.tensor<f32[4, 2 didx, 8], mesh=[0, 1]>) -> !fusion.tensor<f32[4, 2, 8], mesh=[0, 1]> {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %c4 = arith.constant 4 : index
  %out = hir.allocate : !fusion.tensor<f32[4, 2, 8], mesh=[0, 1]>
  scf.for %i = %c0 to %c4 step %c1 {
    %av = hir.alias_select %a[%i] axis 0 : !fusion.tensor<f32[4, 2 didx, 8], mesh=[0, 1]> -> !fusion.tensor<f32[2 didx, 8], mesh=[0, 1]>
    %ov = hir.alias_select %out[%i] axis 0 : !fusion.tensor<f32[4, 2, 8], mesh=[0, 1]> -> !fusion.tensor<f32[2, 8], mesh=[0, 1]>
    %g = fusion.set %av into %ov : !fusion.tensor<f32[2 didx, 8], mesh=[0, 1]> -> !fusion.tensor<f32[2, 8], mesh=[0, 1]>
    scf.for %j = %c0 to %c2 step %c1 {
      %s = fusion.reduce sum %av dims [0] : !fusion.tensor<f32[2 didx, 8], mesh=[0, 1]> -> !fusion.tensor<f32[r2, 8], mesh=[0, 1]>
      %e = fusion.exp %s : !fusion.tensor<f32[r2, 8], mesh=[0, 1]> -> !fusion.tensor<f32[8], mesh=[0, 1]>
    }
  }
  hir.return %out : !fusion.tensor<f32[4, 2, 8], mesh=[0, 1]>
}
