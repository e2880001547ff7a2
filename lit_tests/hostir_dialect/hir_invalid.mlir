// RUN: HOSTIR_DIAGNOSTICS

// Every verifier error of the hir dialect, located at the op that breaks the rule.


// hir.alias_select: a view of one slice along a logical axis.
hir.program @p(%t: !fusion.tensor<f32[8, 4]>, %i: index) {
  // CHECK: {{.*}}hir_invalid.mlir:[[# @LINE + 1]]:3: error: 'hir.alias_select' op axis 2 is out of range for rank 2
  %v = hir.alias_select %t[%i] axis 2 : !fusion.tensor<f32[8, 4]> -> !fusion.tensor<f32[8]>
  hir.return
}
// -----
// CHECK: // {{-----}}
hir.program @p(%t: !fusion.tensor<f32[8, r4]>, %i: index) {
  // CHECK-NEXT: {{.*}}hir_invalid.mlir:[[# @LINE + 1]]:3: error: 'hir.alias_select' op axis 1 is a reduction axis, which has no storage to take a view of
  %v = hir.alias_select %t[%i] axis 1 : !fusion.tensor<f32[8, r4]> -> !fusion.tensor<f32[8]>
  hir.return
}
// -----
// CHECK: // {{-----}}
hir.program @p(%t: !fusion.tensor<f32[8, 4]>, %i: index) {
  // CHECK-NEXT: {{.*}}hir_invalid.mlir:[[# @LINE + 1]]:3: error: 'hir.alias_select' op result extents [8] must be the input's without axis 0: [4]
  %v = hir.alias_select %t[%i] axis 0 : !fusion.tensor<f32[8, 4]> -> !fusion.tensor<f32[8]>
  hir.return
}
// -----
// CHECK: // {{-----}}
hir.program @p(%t: !fusion.tensor<f32[8, 4]>, %i: index) {
  // CHECK-NEXT: {{.*}}hir_invalid.mlir:[[# @LINE + 1]]:3: error: 'hir.alias_select' op result extents [8, 1] must be the input's without axis 1: [8]
  %v = hir.alias_select %t[%i] axis 1 : !fusion.tensor<f32[8, 4]> -> !fusion.tensor<f32[8, 1]>
  hir.return
}
// -----
// CHECK: // {{-----}}
hir.program @p(%t: !fusion.tensor<f32[8, 4]>, %i: index) {
  // CHECK-NEXT: {{.*}}hir_invalid.mlir:[[# @LINE + 1]]:3: error: 'hir.alias_select' op a view keeps the element type of its input
  %v = hir.alias_select %t[%i] axis 0 : !fusion.tensor<f32[8, 4]> -> !fusion.tensor<bf16[4]>
  hir.return
}
// -----
// CHECK: // {{-----}}
// hir.alias_as: the same elements of a rank's buffer seen as a value of another type.
hir.program @p(%t: !fusion.tensor<f32[r2, 8], mesh=[0, 1]>) {
  // CHECK-NEXT: {{.*}}hir_invalid.mlir:[[# @LINE + 1]]:3: error: 'hir.alias_as' op a view keeps the element type of its input
  %v = hir.alias_as %t : !fusion.tensor<f32[r2, 8], mesh=[0, 1]> -> !fusion.tensor<bf16[2 didx, 8], mesh=[0, 1]>
  hir.return
}
// -----
// CHECK: // {{-----}}
hir.program @p(%t: !fusion.tensor<f32[r2, 8], mesh=[0, 1]>) {
  // CHECK-NEXT: {{.*}}hir_invalid.mlir:[[# @LINE + 1]]:3: error: 'hir.alias_as' op a rank's buffer of 8 elements cannot be seen as one of 16
  %v = hir.alias_as %t : !fusion.tensor<f32[r2, 8], mesh=[0, 1]> -> !fusion.tensor<f32[2, 8], mesh=[0, 1]>
  hir.return
}
// -----
// CHECK: // {{-----}}
hir.program @p(%t: !fusion.tensor<f32[2, 8]>) {
  // CHECK-NEXT: {{.*}}hir_invalid.mlir:[[# @LINE + 1]]:3: error: 'hir.alias_as' op views a buffer of a mesh as a value of the same mesh
  %v = hir.alias_as %t : !fusion.tensor<f32[2, 8]> -> !fusion.tensor<f32[16]>
  hir.return
}
// -----
// CHECK: // {{-----}}
hir.program @p(%t: !fusion.tensor<f32[2, 8], mesh=[0, 1], alloc=[1, 0]>) {
  // CHECK-NEXT: {{.*}}hir_invalid.mlir:[[# @LINE + 1]]:3: error: 'hir.alias_as' op views only buffers laid out whole in logical order, not !fusion.tensor<f32[2, 8], mesh=[0, 1], alloc=[1, 0]>
  %v = hir.alias_as %t : !fusion.tensor<f32[2, 8], mesh=[0, 1], alloc=[1, 0]> -> !fusion.tensor<f32[16], mesh=[0, 1]>
  hir.return
}
// -----
// CHECK: // {{-----}}
hir.program @p(%t: !fusion.tensor<f32[2 didx, ?], mesh=[0, 1]>) {
  // CHECK-NEXT: {{.*}}hir_invalid.mlir:[[# @LINE + 1]]:3: error: 'hir.alias_as' op views only buffers of static local shapes
  %v = hir.alias_as %t : !fusion.tensor<f32[2 didx, ?], mesh=[0, 1]> -> !fusion.tensor<f32[r2, ?], mesh=[0, 1]>
  hir.return
}
// -----
// CHECK: // {{-----}}
// hir.alias_chunk: a view of block i of `parts` along a logical axis, which it keeps.
hir.program @p(%t: !fusion.tensor<f32[9, 4]>, %i: index) {
  // CHECK-NEXT: {{.*}}hir_invalid.mlir:[[# @LINE + 1]]:3: error: 'hir.alias_chunk' op axis 0 of extent 9 is not 2 equal parts
  %v = hir.alias_chunk %t[%i] axis 0 parts 2 : !fusion.tensor<f32[9, 4]> -> !fusion.tensor<f32[4, 4]>
  hir.return
}
// -----
// CHECK: // {{-----}}
hir.program @p(%t: !fusion.tensor<f32[8, 4]>, %i: index) {
  // CHECK-NEXT: {{.*}}hir_invalid.mlir:[[# @LINE + 1]]:3: error: 'hir.alias_chunk' op result extents [8, 4] must be the input's with axis 0 in 2 parts: [4, 4]
  %v = hir.alias_chunk %t[%i] axis 0 parts 2 : !fusion.tensor<f32[8, 4]> -> !fusion.tensor<f32[8, 4]>
  hir.return
}
// -----
// CHECK: // {{-----}}
hir.program @p(%t: !fusion.tensor<f32[8, 4]>, %i: index) {
  // CHECK-NEXT: {{.*}}hir_invalid.mlir:[[# @LINE + 1]]:3: error: 'hir.alias_chunk' op result extents [4] must be the input's with axis 0 in 2 parts: [4, 4]
  %v = hir.alias_chunk %t[%i] axis 0 parts 2 : !fusion.tensor<f32[8, 4]> -> !fusion.tensor<f32[4]>
  hir.return
}
// -----
// CHECK: // {{-----}}
hir.program @p(%t: !fusion.tensor<f32[8(2 didx, 4), 4], mesh=[0, 1]>, %i: index) {
  // CHECK-NEXT: {{.*}}hir_invalid.mlir:[[# @LINE + 1]]:3: error: 'hir.alias_chunk' op takes chunks of axis 0, which is sharded across devices
  %v = hir.alias_chunk %t[%i] axis 0 parts 2 : !fusion.tensor<f32[8(2 didx, 4), 4], mesh=[0, 1]> -> !fusion.tensor<f32[4, 4], mesh=[0, 1]>
  hir.return
}
// -----
// CHECK: // {{-----}}
hir.program @p(%t: !fusion.tensor<f32[12(3, 2 didx, 2)], mesh=[0, 1]>, %i: index) {
  // CHECK-NEXT: {{.*}}hir_invalid.mlir:[[# @LINE + 1]]:3: error: 'hir.alias_chunk' op takes chunks of axis 0, which is shared by devices inside an outer piece that 2 parts do not divide
  %v = hir.alias_chunk %t[%i] axis 0 parts 2 : !fusion.tensor<f32[12(3, 2 didx, 2)], mesh=[0, 1]> -> !fusion.tensor<f32[6, 4], mesh=[0, 1]>
  hir.return
}
// -----
// CHECK: // {{-----}}
hir.program @p(%t: !fusion.tensor<f32[8, 4]>, %i: index) {
  // CHECK-NEXT: {{.*}}hir_invalid.mlir:[[# @LINE + 1]]:3: error: 'hir.alias_chunk' op takes a chunk of 0 parts; there must be at least one
  %v = hir.alias_chunk %t[%i] axis 0 parts 0 : !fusion.tensor<f32[8, 4]> -> !fusion.tensor<f32[8, 4]>
  hir.return
}
// -----
// CHECK: // {{-----}}
hir.program @p(%t: !fusion.tensor<f32[8, r4]>, %i: index) {
  // CHECK-NEXT: {{.*}}hir_invalid.mlir:[[# @LINE + 1]]:3: error: 'hir.alias_chunk' op axis 1 is a reduction axis, which has no storage to take a view of
  %v = hir.alias_chunk %t[%i] axis 1 parts 2 : !fusion.tensor<f32[8, r4]> -> !fusion.tensor<f32[8, r2]>
  hir.return
}
// -----
// CHECK: // {{-----}}
hir.program @p(%t: !fusion.tensor<f32[8, 4]>, %i: i64) {
  // CHECK-NEXT: {{.*}}hir_invalid.mlir:[[# @LINE + 1]]:28: error: operand is used with type index, but has been previously used or defined with type i64
  %v = hir.alias_select %t[%i] axis 0 : !fusion.tensor<f32[8, 4]> -> !fusion.tensor<f32[4]>
  hir.return
}
// -----
// CHECK: // {{-----}}
hir.program @p(%t: !fusion.tensor<f32[2 didx, 4], mesh=[0, 1]>) {
  %i = arith.constant 0 : index
  // CHECK-NEXT: {{.*}}hir_invalid.mlir:[[# @LINE + 1]]:3: error: 'hir.alias_select' op selects on axis 0, which is sharded across devices: only this rank's own slice, at `hir.team_position team [0, 1]`
  %v = hir.alias_select %t[%i] axis 0 : !fusion.tensor<f32[2 didx, 4], mesh=[0, 1]> -> !fusion.tensor<f32[4], mesh=[0, 1]>
  hir.return
}
// -----
// CHECK: // {{-----}}
hir.program @p(%t: !fusion.tensor<f32[4(2 didx, 2), 4], mesh=[0, 1]>) {
  %me = hir.team_position team [0, 1]
  // CHECK-NEXT: {{.*}}hir_invalid.mlir:[[# @LINE + 1]]:3: error: 'hir.alias_select' op selects on axis 0, which is sharded across devices: only an unsplit axis of a 1-D mesh has one slice per device
  %v = hir.alias_select %t[%me] axis 0 : !fusion.tensor<f32[4(2 didx, 2), 4], mesh=[0, 1]> -> !fusion.tensor<f32[4], mesh=[0, 1]>
  hir.return
}
// -----

// hir.extent
// CHECK: // {{-----}}
hir.program @p(%t: !fusion.tensor<f32[?, 4]>) {
  // CHECK-NEXT: {{.*}}hir_invalid.mlir:[[# @LINE + 1]]:3: error: 'hir.extent' op axis 2 is out of range for rank 2
  %n = hir.extent %t axis 2 : !fusion.tensor<f32[?, 4]>
  hir.return
}
// -----

// hir.post_on_stream calls a fusion.func of this module with its signature.
// CHECK: // {{-----}}
hir.program @p(%a: !fusion.tensor<f32[8, 4]>) {
  // CHECK-NEXT: {{.*}}hir_invalid.mlir:[[# @LINE + 1]]:3: error: 'hir.post_on_stream' op @missing is not a fusion.func in this module
  %r = hir.post_on_stream @missing(%a) : (!fusion.tensor<f32[8, 4]>) -> !fusion.tensor<f32[8, 4]>
  hir.return
}
// -----
// CHECK: // {{-----}}
hir.program @p(%a: !fusion.tensor<f32[8, 4]>) {
  // CHECK-NEXT: {{.*}}hir_invalid.mlir:[[# @LINE + 1]]:3: error: 'hir.post_on_stream' op @p is not a fusion.func in this module
  %r = hir.post_on_stream @p(%a) : (!fusion.tensor<f32[8, 4]>) -> !fusion.tensor<f32[8, 4]>
  hir.return
}
// -----
// CHECK: // {{-----}}
fusion.func @u(%a: !fusion.tensor<f32[8, 4]>) -> !fusion.tensor<f32[8, 4]> {
  %b = fusion.exp %a : !fusion.tensor<f32[8, 4]> -> !fusion.tensor<f32[8, 4]>
  fusion.return %b : !fusion.tensor<f32[8, 4]>
}
hir.program @p(%a: !fusion.tensor<f32[8, 4]>) {
  // CHECK-NEXT: {{.*}}hir_invalid.mlir:[[# @LINE + 1]]:3: error: 'hir.post_on_stream' op inputs do not match @u's signature: 2 given, 1 expected
  %r = hir.post_on_stream @u(%a, %a) : (!fusion.tensor<f32[8, 4]>, !fusion.tensor<f32[8, 4]>) -> !fusion.tensor<f32[8, 4]>
  hir.return
}
// -----
// CHECK: // {{-----}}
fusion.func @u(%a: !fusion.tensor<f32[8, 4]>) -> !fusion.tensor<f32[8, 4]> {
  %b = fusion.exp %a : !fusion.tensor<f32[8, 4]> -> !fusion.tensor<f32[8, 4]>
  fusion.return %b : !fusion.tensor<f32[8, 4]>
}
hir.program @p(%a: !fusion.tensor<f32[4, 8]>) {
  // CHECK-NEXT: {{.*}}hir_invalid.mlir:[[# @LINE + 1]]:3: error: 'hir.post_on_stream' op input types do not match @u's signature
  %r = hir.post_on_stream @u(%a) : (!fusion.tensor<f32[4, 8]>) -> !fusion.tensor<f32[8, 4]>
  hir.return
}
// -----
// CHECK: // {{-----}}
fusion.func @u(%a: !fusion.tensor<f32[8, 4]>) -> !fusion.tensor<f32[8, 4]> {
  %b = fusion.exp %a : !fusion.tensor<f32[8, 4]> -> !fusion.tensor<f32[8, 4]>
  fusion.return %b : !fusion.tensor<f32[8, 4]>
}
hir.program @p(%a: !fusion.tensor<f32[8, 4]>) {
  // CHECK-NEXT: {{.*}}hir_invalid.mlir:[[# @LINE + 1]]:3: error: 'hir.post_on_stream' op results do not match @u's signature
  %r = hir.post_on_stream @u(%a) : (!fusion.tensor<f32[8, 4]>) -> !fusion.tensor<f32[8]>
  hir.return
}
// -----
// CHECK: // {{-----}}
fusion.func @u(%a: !fusion.tensor<f32[8, 4]>) -> !fusion.tensor<f32[8, 4]> {
  %b = fusion.exp %a : !fusion.tensor<f32[8, 4]> -> !fusion.tensor<f32[8, 4]>
  fusion.return %b : !fusion.tensor<f32[8, 4]>
}
hir.program @p(%a: !fusion.tensor<f32[8, 4]>) {
  // CHECK-NEXT: {{.*}}hir_invalid.mlir:[[# @LINE + 1]]:3: error: 'hir.post_on_stream' op results do not match @u's signature
  hir.post_on_stream @u(%a) : (!fusion.tensor<f32[8, 4]>) -> ()
  hir.return
}
// -----
// CHECK: // {{-----}}
fusion.func @u(%a: !fusion.tensor<f32[8, 4]>) -> !fusion.tensor<f32[8, 4]> {
  %b = fusion.exp %a : !fusion.tensor<f32[8, 4]> -> !fusion.tensor<f32[8, 4]>
  fusion.return %b : !fusion.tensor<f32[8, 4]>
}
hir.program @p(%a: !fusion.tensor<f32[8, 4]>, %o: !fusion.tensor<f32[4, 8]>) {
  // CHECK-NEXT: {{.*}}hir_invalid.mlir:[[# @LINE + 1]]:3: error: 'hir.post_on_stream' op outs must be given for all results or none, with the result types
  %r = hir.post_on_stream @u(%a) outs(%o : !fusion.tensor<f32[4, 8]>) : (!fusion.tensor<f32[8, 4]>) -> !fusion.tensor<f32[8, 4]>
  hir.return
}
// -----
// CHECK: // {{-----}}
fusion.func @u(%a: !fusion.tensor<f32[8, 4]>) -> !fusion.tensor<f32[8, 4]> {
  %b = fusion.exp %a : !fusion.tensor<f32[8, 4]> -> !fusion.tensor<f32[8, 4]>
  fusion.return %b : !fusion.tensor<f32[8, 4]>
}
hir.program @p(%a: !fusion.tensor<f32[8, 4]>) {
  // CHECK-NEXT: {{.*}}hir_invalid.mlir:[[# @LINE + 1]]:3: error: 'hir.post_on_stream' op outs must be given for all results or none, with the result types
  %r = hir.post_on_stream @u(%a) outs(%a, %a : !fusion.tensor<f32[8, 4]>, !fusion.tensor<f32[8, 4]>) : (!fusion.tensor<f32[8, 4]>) -> !fusion.tensor<f32[8, 4]>
  hir.return
}
// -----

// Collectives: a non-empty team of distinct devices, a root iff the collective has one (in the team), a reduction kind iff it reduces.
// CHECK: // {{-----}}
hir.program @p(%x: !fusion.tensor<f32[4]>, %y: !fusion.tensor<f32[8]>) {
  // CHECK-NEXT: {{.*}}hir_invalid.mlir:[[# @LINE + 1]]:3: error: 'hir.allgather' op team must not be empty
  %w = hir.allgather %x -> %y team [] : !fusion.tensor<f32[4]> -> !fusion.tensor<f32[8]>
  hir.return
}
// -----
// CHECK: // {{-----}}
hir.program @p(%x: !fusion.tensor<f32[4]>, %y: !fusion.tensor<f32[8]>) {
  // CHECK-NEXT: {{.*}}hir_invalid.mlir:[[# @LINE + 1]]:3: error: 'hir.allgather' op team [0, 1, 0] repeats a device
  %w = hir.allgather %x -> %y team [0, 1, 0] : !fusion.tensor<f32[4]> -> !fusion.tensor<f32[8]>
  hir.return
}
// -----
// CHECK: // {{-----}}
hir.program @p(%x: !fusion.tensor<f32[4]>, %y: !fusion.tensor<f32[8]>) {
  // CHECK-NEXT: {{.*}}hir_invalid.mlir:[[# @LINE + 1]]:3: error: 'hir.allgather' op hir.allgather takes no root
  %w = hir.allgather %x -> %y team [0, 1] root 0 : !fusion.tensor<f32[4]> -> !fusion.tensor<f32[8]>
  hir.return
}
// -----
// CHECK: // {{-----}}
hir.program @p(%x: !fusion.tensor<f32[4]>, %y: !fusion.tensor<f32[8]>) {
  // CHECK-NEXT: {{.*}}hir_invalid.mlir:[[# @LINE + 1]]:3: error: 'hir.allreduce' op hir.allreduce takes no root
  %w = hir.allreduce %x -> %x team [0, 1] root 0 op sum : !fusion.tensor<f32[4]> -> !fusion.tensor<f32[4]>
  hir.return
}
// -----
// CHECK: // {{-----}}
hir.program @p(%x: !fusion.tensor<f32[4]>, %y: !fusion.tensor<f32[8]>) {
  // CHECK-NEXT: {{.*}}hir_invalid.mlir:[[# @LINE + 1]]:3: error: 'hir.scatter' op hir.scatter needs root
  %w = hir.scatter %y -> %x team [0, 1] : !fusion.tensor<f32[8]> -> !fusion.tensor<f32[4]>
  hir.return
}
// -----
// CHECK: // {{-----}}
hir.program @p(%x: !fusion.tensor<f32[4]>, %y: !fusion.tensor<f32[8]>) {
  // CHECK-NEXT: {{.*}}hir_invalid.mlir:[[# @LINE + 1]]:3: error: 'hir.gather' op hir.gather needs root
  %w = hir.gather %x -> %y team [0, 1] : !fusion.tensor<f32[4]> -> !fusion.tensor<f32[8]>
  hir.return
}
// -----
// CHECK: // {{-----}}
hir.program @p(%x: !fusion.tensor<f32[4]>, %y: !fusion.tensor<f32[8]>) {
  // CHECK-NEXT: {{.*}}hir_invalid.mlir:[[# @LINE + 1]]:3: error: 'hir.broadcast' op hir.broadcast needs root
  %w = hir.broadcast %x -> %x team [0, 1] : !fusion.tensor<f32[4]> -> !fusion.tensor<f32[4]>
  hir.return
}
// -----
// CHECK: // {{-----}}
hir.program @p(%x: !fusion.tensor<f32[4]>, %y: !fusion.tensor<f32[8]>) {
  // CHECK-NEXT: {{.*}}hir_invalid.mlir:[[# @LINE + 1]]:3: error: 'hir.reduce' op hir.reduce needs root
  %w = hir.reduce %x -> %x team [0, 1] op sum : !fusion.tensor<f32[4]> -> !fusion.tensor<f32[4]>
  hir.return
}
// -----
// CHECK: // {{-----}}
hir.program @p(%x: !fusion.tensor<f32[4]>, %y: !fusion.tensor<f32[8]>) {
  // CHECK-NEXT: {{.*}}hir_invalid.mlir:[[# @LINE + 1]]:3: error: 'hir.send_recv' op hir.send_recv needs root
  %w = hir.send_recv %x -> %x team [0, 1] : !fusion.tensor<f32[4]> -> !fusion.tensor<f32[4]>
  hir.return
}
// -----
// CHECK: // {{-----}}
hir.program @p(%x: !fusion.tensor<f32[4]>, %y: !fusion.tensor<f32[8]>) {
  // CHECK-NEXT: {{.*}}hir_invalid.mlir:[[# @LINE + 1]]:3: error: 'hir.scatter' op root 2 is not in team [0, 1]
  %w = hir.scatter %y -> %x team [0, 1] root 2 : !fusion.tensor<f32[8]> -> !fusion.tensor<f32[4]>
  hir.return
}
// -----
// CHECK: // {{-----}}
hir.program @p(%x: !fusion.tensor<f32[4]>, %y: !fusion.tensor<f32[8]>) {
  // CHECK-NEXT: {{.*}}hir_invalid.mlir:[[# @LINE + 1]]:3: error: 'hir.reduce' op root 0 is not in team [2, 3]
  %w = hir.reduce %x -> %x team [2, 3] root 0 op max : !fusion.tensor<f32[4]> -> !fusion.tensor<f32[4]>
  hir.return
}
// -----
// CHECK: // {{-----}}
hir.program @p(%x: !fusion.tensor<f32[4]>, %y: !fusion.tensor<f32[8]>) {
  // CHECK-NEXT: {{.*}}hir_invalid.mlir:[[# @LINE + 1]]:3: error: 'hir.allreduce' op hir.allreduce needs a reduction kind (op ...)
  %w = hir.allreduce %x -> %x team [0, 1] : !fusion.tensor<f32[4]> -> !fusion.tensor<f32[4]>
  hir.return
}
// -----
// CHECK: // {{-----}}
hir.program @p(%x: !fusion.tensor<f32[4]>, %y: !fusion.tensor<f32[8]>) {
  // CHECK-NEXT: {{.*}}hir_invalid.mlir:[[# @LINE + 1]]:3: error: 'hir.reduce_scatter' op hir.reduce_scatter needs a reduction kind (op ...)
  %w = hir.reduce_scatter %y -> %x team [0, 1] : !fusion.tensor<f32[8]> -> !fusion.tensor<f32[4]>
  hir.return
}
// -----
// CHECK: // {{-----}}
hir.program @p(%x: !fusion.tensor<f32[4]>, %y: !fusion.tensor<f32[8]>) {
  // CHECK-NEXT: {{.*}}hir_invalid.mlir:[[# @LINE + 1]]:3: error: 'hir.reduce' op hir.reduce needs a reduction kind (op ...)
  %w = hir.reduce %x -> %x team [0, 1] root 0 : !fusion.tensor<f32[4]> -> !fusion.tensor<f32[4]>
  hir.return
}
// -----
// CHECK: // {{-----}}
hir.program @p(%x: !fusion.tensor<f32[4]>, %y: !fusion.tensor<f32[8]>) {
  // CHECK-NEXT: {{.*}}hir_invalid.mlir:[[# @LINE + 1]]:3: error: 'hir.allgather' op hir.allgather takes no reduction kind
  %w = hir.allgather %x -> %y team [0, 1] op sum : !fusion.tensor<f32[4]> -> !fusion.tensor<f32[8]>
  hir.return
}
// -----
// CHECK: // {{-----}}
hir.program @p(%x: !fusion.tensor<f32[4]>, %y: !fusion.tensor<f32[8]>) {
  // CHECK-NEXT: {{.*}}hir_invalid.mlir:[[# @LINE + 1]]:3: error: 'hir.all_to_all' op hir.all_to_all takes no reduction kind
  %w = hir.all_to_all %y -> %y team [0, 1] op sum : !fusion.tensor<f32[8]> -> !fusion.tensor<f32[8]>
  hir.return
}
// -----
// CHECK: // {{-----}}
hir.program @p(%x: !fusion.tensor<f32[4]>, %y: !fusion.tensor<f32[8]>) {
  // CHECK-NEXT: {{.*}}hir_invalid.mlir:[[# @LINE + 1]]:3: error: 'hir.broadcast' op hir.broadcast takes no reduction kind
  %w = hir.broadcast %x -> %x team [0, 1] root 0 op max : !fusion.tensor<f32[4]> -> !fusion.tensor<f32[4]>
  hir.return
}
// -----
// CHECK: // {{-----}}
hir.program @p(%x: !fusion.tensor<f32[4]>, %y: !fusion.tensor<bf16[8]>) {
  // CHECK-NEXT: {{.*}}hir_invalid.mlir:[[# @LINE + 1]]:3: error: 'hir.allgather' op input and output buffers have different element types
  %w = hir.allgather %x -> %y team [0, 1] : !fusion.tensor<f32[4]> -> !fusion.tensor<bf16[8]>
  hir.return
}
// -----
// CHECK: // {{-----}}
hir.program @p(%x: !fusion.tensor<f32[4]>, %y: !fusion.tensor<f32[8]>) {
  // CHECK-NEXT: {{.*}}hir_invalid.mlir:[[# @LINE + 1]]:46: error: Expected `sum`, `prod`, `max`, or `min`.
  %w = hir.allreduce %x -> %x team [0, 1] op mean : !fusion.tensor<f32[4]> -> !fusion.tensor<f32[4]>
  hir.return
}
// -----
// CHECK: // {{-----}}
hir.program @p(%x: !fusion.tensor<f32[4]>, %y: !fusion.tensor<f32[8]>) {
  // CHECK-NEXT: {{.*}}hir_invalid.mlir:[[# @LINE + 1]]:53: error: Expected `nccl`, or `copy_engine`.
  %w = hir.allgather %x -> %y team [0, 1] transport mpi : !fusion.tensor<f32[4]> -> !fusion.tensor<f32[8]>
  hir.return
}
// -----

// Point-to-point and wait.
// CHECK: // {{-----}}
hir.program @p(%x: !fusion.tensor<f32[4]>, %peer: i32) {
  // CHECK-NEXT: {{.*}}hir_invalid.mlir:[[# @LINE + 1]]:21: error: operand is used with type index, but has been previously used or defined with type i32
  %w = hir.send %x, %peer : !fusion.tensor<f32[4]>
  hir.return
}
// -----
// CHECK: // {{-----}}
hir.program @p(%x: !fusion.tensor<f32[4]>, %s: !hir.stream) {
  // CHECK-NEXT: {{.*}}hir_invalid.mlir:[[# @LINE + 1]]:12: error: operand is used with type !hir.work, but has been previously used or defined with type !hir.stream
  hir.wait %s
  hir.return
}
// -----

// Streams.
// CHECK: // {{-----}}
hir.program @p(%k: i64) {
  // CHECK-NEXT: {{.*}}hir_invalid.mlir:[[# @LINE + 1]]:19: error: operand is used with type index, but has been previously used or defined with type i64
  %s = hir.stream %k
  hir.return
}
// -----

// hir.program / hir.return.
// CHECK: // {{-----}}
// CHECK-NEXT: {{.*}}hir_invalid.mlir:[[# @LINE + 1]]:1: error: 'hir.program' op returned types (!fusion.tensor<f32[8, 4]>) do not match the declared results (!fusion.tensor<f32[4, 8]>)
hir.program @p(%a: !fusion.tensor<f32[8, 4]>) -> !fusion.tensor<f32[4, 8]> {
  hir.return %a : !fusion.tensor<f32[8, 4]>
}
// -----
// CHECK: // {{-----}}
// CHECK-NEXT: {{.*}}hir_invalid.mlir:[[# @LINE + 1]]:1: error: 'hir.program' op returned types () do not match the declared results (!fusion.tensor<f32[8, 4]>)
hir.program @p(%a: !fusion.tensor<f32[8, 4]>) -> !fusion.tensor<f32[8, 4]> {
  hir.return
}
// -----
// CHECK: // {{-----}}
// CHECK-NEXT: {{.*}}hir_invalid.mlir:[[# @LINE + 1]]:1: error: 'hir.program' op body must end with hir.return
hir.program @p(%a: !fusion.tensor<f32[8, 4]>) {
  %b = hir.allocate : !fusion.tensor<f32[8, 4]>
}
// -----
// CHECK: // {{-----}}
hir.program @p(%t: !fusion.tensor<f32[8, 4]>) {
  // CHECK-NEXT: {{.*}}hir_invalid.mlir:[[# @LINE + 1]]:3: error: 'hir.return' op 'hir.return' must be the last operation in its parent block
  hir.return
  hir.deallocate %t : !fusion.tensor<f32[8, 4]>
  hir.return
}
// -----
// CHECK: // {{-----}}
// CHECK-NEXT: {{.*}}hir_invalid.mlir:[[# @LINE + 1]]:1: error: 'hir.return' op 'hir.return' expects parent op 'hir.program'
hir.return
// -----

// hir.allocate: the logical extent of every dynamic value axis, or none.
// CHECK: // {{-----}}
hir.program @p(%n: index) {
  // CHECK-NEXT: {{.*}}hir_invalid.mlir:[[# @LINE + 1]]:3: error: 'hir.allocate' op 2 extents given for 1 dynamic value axes
  %b = hir.allocate(%n, %n) : !fusion.tensor<f32[?, 4, r?]>
  hir.return
}
// -----

// The copy-engine transport (docs/copy_engine.md).
// CHECK: // {{-----}}
hir.program @p() {
  // CHECK-NEXT: {{.*}}hir_invalid.mlir:[[# @LINE + 1]]:3: error: 'hir.allocate' op a symmetric buffer needs a device mesh: the devices that allocate it
  %s = hir.allocate symmetric : !fusion.tensor<f32[4]>
  hir.return
}
// -----
// CHECK: // {{-----}}
hir.program @p() {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  scf.for %i = %c0 to %c2 step %c1 {
    // CHECK-NEXT: {{.*}}hir_invalid.mlir:[[# @LINE + 1]]:5: error: 'hir.allocate' op a symmetric buffer cannot be allocated in a loop: it is created once and acquired from the peers, so every iteration would reuse the memory that earlier iterations may still read on other streams; allocate one slice per iteration before the loop
    %s = hir.allocate symmetric : !fusion.tensor<f32[4], mesh=[0, 1]>
    hir.deallocate %s : !fusion.tensor<f32[4], mesh=[0, 1]>
  }
  hir.return
}
// -----
// CHECK: // {{-----}}
hir.program @p(%x: !fusion.tensor<f32[4]>, %y: !fusion.tensor<f32[8]>) {
  // CHECK-NEXT: {{.*}}hir_invalid.mlir:[[# @LINE + 1]]:3: error: 'hir.gather' op hir.gather has no copy-engine algorithm (allgather, reduce_scatter and allreduce have)
  %w = hir.gather %x -> %y team [0, 1] root 0 transport copy_engine : !fusion.tensor<f32[4]> -> !fusion.tensor<f32[8]>
  hir.return
}
// -----
// CHECK: // {{-----}}
hir.program @p(%x: !fusion.tensor<f32[4]>, %y: !fusion.tensor<f32[8]>) {
  // CHECK-NEXT: {{.*}}hir_invalid.mlir:[[# @LINE + 1]]:3: error: 'hir.reduce_scatter' op hir.reduce_scatter with the copy-engine transport needs a `via` buffer
  %w = hir.reduce_scatter %y -> %x team [0, 1] op sum transport copy_engine : !fusion.tensor<f32[8]> -> !fusion.tensor<f32[4]>
  hir.return
}
// -----
// CHECK: // {{-----}}
hir.program @p(%x: !fusion.tensor<f32[4]>, %y: !fusion.tensor<f32[8]>) {
  // CHECK-NEXT: {{.*}}hir_invalid.mlir:[[# @LINE + 1]]:3: error: 'hir.allgather' op hir.allgather with the copy-engine transport takes no `via` buffer
  %w = hir.allgather %x -> %y via %y team [0, 1] transport copy_engine : !fusion.tensor<f32[4]> -> !fusion.tensor<f32[8]>, !fusion.tensor<f32[8]>
  hir.return
}
// -----
// CHECK: // {{-----}}
hir.program @p(%x: !fusion.tensor<f32[4]>, %y: !fusion.tensor<f32[8]>) {
  // CHECK-NEXT: {{.*}}hir_invalid.mlir:[[# @LINE + 1]]:3: error: 'hir.allreduce' op only the copy-engine transport receives through a `via` buffer
  %w = hir.allreduce %x -> %x via %y team [0, 1] op sum : !fusion.tensor<f32[4]> -> !fusion.tensor<f32[4]>, !fusion.tensor<f32[8]>
  hir.return
}
// -----
// CHECK: // {{-----}}
hir.program @p(%x: !fusion.tensor<f32[4]>, %y: !fusion.tensor<f32[4]>) {
  // CHECK-NEXT: {{.*}}hir_invalid.mlir:[[# @LINE + 1]]:3: error: 'hir.allreduce' op the via buffer holds 4 elements per member but hir.allreduce needs 8 for an input of 4 on a team of 2
  %w = hir.allreduce %x -> %x via %y team [0, 1] op sum transport copy_engine : !fusion.tensor<f32[4]> -> !fusion.tensor<f32[4]>, !fusion.tensor<f32[4]>
  hir.return
}
// -----
// CHECK: // {{-----}}
// An output in symmetric memory receives the reduced chunks: the via buffer holds the input's size.
hir.program @p(%x: !fusion.tensor<f32[4], mesh=[0, 1]>) {
  %out = hir.allocate symmetric : !fusion.tensor<f32[4], mesh=[0, 1]>
  %via = hir.allocate symmetric : !fusion.tensor<f32[8], mesh=[0, 1]>
  // CHECK-NEXT: {{.*}}hir_invalid.mlir:[[# @LINE + 1]]:3: error: 'hir.allreduce' op the via buffer holds 8 elements per member but hir.allreduce needs 4 for an input of 4 on a team of 2
  %w = hir.allreduce %x -> %out via %via team [0, 1] op sum transport copy_engine : !fusion.tensor<f32[4], mesh=[0, 1]> -> !fusion.tensor<f32[4], mesh=[0, 1]>, !fusion.tensor<f32[8], mesh=[0, 1]>
  hir.return
}
// -----
// CHECK: // {{-----}}
// With `own` too, on a team of two, the peer pushes its chunk into the output: no via buffer.
hir.program @p(%x: !fusion.tensor<f32[8, 3], mesh=[0, 1]>, %a: !fusion.tensor<f32[4, 2], mesh=[0, 1]>, %b: !fusion.tensor<f32[2, 3], mesh=[0, 1]>) {
  %out = hir.allocate symmetric : !fusion.tensor<f32[8, 3], mesh=[0, 1]>
  %via = hir.allocate symmetric : !fusion.tensor<f32[8, 3], mesh=[0, 1]>
  // CHECK-NEXT: {{.*}}hir_invalid.mlir:[[# @LINE + 1]]:3: error: 'hir.allreduce' op hir.allreduce with the copy-engine transport takes no `via` buffer on a team of two with `own` and a symmetric output (the peer's chunks land in the output)
  %w = hir.allreduce %x -> %out via %via own(%a, %b : !fusion.tensor<f32[4, 2], mesh=[0, 1]>, !fusion.tensor<f32[2, 3], mesh=[0, 1]>) team [0, 1] op sum transport copy_engine : !fusion.tensor<f32[8, 3], mesh=[0, 1]> -> !fusion.tensor<f32[8, 3], mesh=[0, 1]>, !fusion.tensor<f32[8, 3], mesh=[0, 1]>
  hir.return
}
// -----
// CHECK: // {{-----}}
// A reduce-scatter's `own` product: a chunk's worth of elements, the copy engines, a sum.
hir.program @p(%x: !fusion.tensor<f32[8, 3], mesh=[0, 1]>, %a: !fusion.tensor<f32[2, 2], mesh=[0, 1]>, %b: !fusion.tensor<f32[2, 3], mesh=[0, 1]>) {
  %out = hir.allocate symmetric : !fusion.tensor<f32[4, 3], mesh=[0, 1]>
  // CHECK-NEXT: {{.*}}hir_invalid.mlir:[[# @LINE + 1]]:3: error: 'hir.reduce_scatter' op `own`'s product has 6 elements per member, but a chunk of the input has 12
  %w = hir.reduce_scatter %x -> %out own(%a, %b : !fusion.tensor<f32[2, 2], mesh=[0, 1]>, !fusion.tensor<f32[2, 3], mesh=[0, 1]>) team [0, 1] op sum transport copy_engine : !fusion.tensor<f32[8, 3], mesh=[0, 1]> -> !fusion.tensor<f32[4, 3], mesh=[0, 1]>
  hir.return
}
// -----
// CHECK: // {{-----}}
// On a team of four, only the lead's chunk lands in the output; the others' need the via buffer.
hir.program @p(%x: !fusion.tensor<f32[8, 3], mesh=[0, 1, 2, 3]>, %a: !fusion.tensor<f32[2, 2], mesh=[0, 1, 2, 3]>, %b: !fusion.tensor<f32[2, 3], mesh=[0, 1, 2, 3]>) {
  %out = hir.allocate symmetric : !fusion.tensor<f32[8, 3], mesh=[0, 1, 2, 3]>
  // CHECK-NEXT: {{.*}}hir_invalid.mlir:[[# @LINE + 1]]:3: error: 'hir.allreduce' op hir.allreduce with the copy-engine transport needs a `via` buffer
  %w = hir.allreduce %x -> %out own(%a, %b : !fusion.tensor<f32[2, 2], mesh=[0, 1, 2, 3]>, !fusion.tensor<f32[2, 3], mesh=[0, 1, 2, 3]>) team [0, 1, 2, 3] op sum transport copy_engine : !fusion.tensor<f32[8, 3], mesh=[0, 1, 2, 3]> -> !fusion.tensor<f32[8, 3], mesh=[0, 1, 2, 3]>
  hir.return
}
// -----
// CHECK: // {{-----}}
hir.program @p(%x: !fusion.tensor<f32[3]>, %y: !fusion.tensor<f32[6]>) {
  // CHECK-NEXT: {{.*}}hir_invalid.mlir:[[# @LINE + 1]]:3: error: 'hir.allreduce' op hir.allreduce cannot use the copy-engine transport: its input of 3 elements per member does not split into 2 equal chunks
  %w = hir.allreduce %x -> %x via %y team [0, 1] op sum transport copy_engine : !fusion.tensor<f32[3]> -> !fusion.tensor<f32[3]>, !fusion.tensor<f32[6]>
  hir.return
}
// -----
// CHECK: // {{-----}}
hir.program @p(%x: !fusion.tensor<f32[4]>, %y: !fusion.tensor<f64[8]>) {
  // CHECK-NEXT: {{.*}}hir_invalid.mlir:[[# @LINE + 1]]:3: error: 'hir.allreduce' op the via buffer and the input have different element types
  %w = hir.allreduce %x -> %x via %y team [0, 1] op sum transport copy_engine : !fusion.tensor<f32[4]> -> !fusion.tensor<f32[4]>, !fusion.tensor<f64[8]>
  hir.return
}
// -----
// CHECK: // {{-----}}
hir.program @p(%x: !fusion.tensor<f32[4]>, %y: !fusion.tensor<f32[8]>) {
  // CHECK-NEXT: {{.*}}hir_invalid.mlir:[[# @LINE + 1]]:3: error: 'hir.allgather' op `peers_only` needs the copy-engine transport (NCCL fills every slot)
  %w = hir.allgather %x -> %y team [0, 1] peers_only : !fusion.tensor<f32[4]> -> !fusion.tensor<f32[8]>
  hir.wait %w
  hir.return
}
// -----
// CHECK: // {{-----}}
hir.program @p(%x: !fusion.tensor<f32[2 didx, 4], mesh=[0, 1]>) {
  %g = hir.allocate symmetric : !fusion.tensor<f32[2, 4], mesh=[0, 1]>
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  // CHECK-NEXT: {{.*}}hir_invalid.mlir:[[# @LINE + 1]]:3: error: 'hir.allgather' op work token %w is never waited whole (hir.wait %w)
  %w = hir.allgather %x -> %g team [0, 1] transport copy_engine : !fusion.tensor<f32[2 didx, 4], mesh=[0, 1]> -> !fusion.tensor<f32[2, 4], mesh=[0, 1]>
  hir.wait %w from %c0
  hir.wait %w from %c1
  hir.deallocate %g : !fusion.tensor<f32[2, 4], mesh=[0, 1]>
  hir.return
}
// -----
// CHECK: // {{-----}}
hir.program @p() {
  // CHECK-NEXT: {{.*}}hir_invalid.mlir:[[# @LINE + 1]]:3: error: 'hir.team_position' op team [0, 0] repeats a device
  %p = hir.team_position team [0, 0]
  hir.return
}
// -----
// A team of a 2-D mesh is one of its slices, and only a 2-D mesh is sliced.
// CHECK: // {{-----}}
hir.program @p() {
  // CHECK-NEXT: {{.*}}hir_invalid.mlir:[[# @LINE + 1]]:3: error: 'hir.team_position' op team [[0, 1], [2, 3]] is a 2-D mesh: say which of its slices a team is (`along didx`, `along didy` or `along didz`)
  %p = hir.team_position team [[0, 1], [2, 3]]
  hir.return
}
// -----
// CHECK: // {{-----}}
hir.program @p(%x: !fusion.tensor<f32[4], mesh=[0, 1]>) {
  // CHECK-NEXT: {{.*}}hir_invalid.mlir:[[# @LINE + 1]]:3: error: 'hir.allreduce' op team [0, 1] along didx slices a 1-D mesh
  %w = hir.allreduce %x -> %x team [0, 1] along didx op sum : !fusion.tensor<f32[4], mesh=[0, 1]> -> !fusion.tensor<f32[4], mesh=[0, 1]>
  hir.wait %w
  hir.return
}
// -----
// A root of a sliced team is a position in each slice.
// CHECK: // {{-----}}
hir.program @p(%x: !fusion.tensor<f32[4], mesh=[[0, 1], [2, 3]]>) {
  // CHECK-NEXT: {{.*}}hir_invalid.mlir:[[# @LINE + 1]]:3: error: 'hir.broadcast' op root 2 is not a position in the teams of 2 of team [[0, 1], [2, 3]] along didy
  %w = hir.broadcast %x -> %x team [[0, 1], [2, 3]] along didy root 2 : !fusion.tensor<f32[4], mesh=[[0, 1], [2, 3]]> -> !fusion.tensor<f32[4], mesh=[[0, 1], [2, 3]]>
  hir.wait %w
  hir.return
}
// -----
// CHECK: // {{-----}}
hir.program @p(%x: !fusion.tensor<f32[2 didx, 4], mesh=[[0, 1], [2, 3]]>, %g: !fusion.tensor<f32[2, 4], mesh=[[0, 1], [2, 3]]>) {
  // CHECK-NEXT: {{.*}}hir_invalid.mlir:[[# @LINE + 1]]:3: error: 'hir.allgather' op the copy-engine transport needs its team listed (its symmetric buffers span one team)
  %w = hir.allgather %x -> %g team [[0, 1], [2, 3]] along didx transport copy_engine : !fusion.tensor<f32[2 didx, 4], mesh=[[0, 1], [2, 3]]> -> !fusion.tensor<f32[2, 4], mesh=[[0, 1], [2, 3]]>
  hir.wait %w
  hir.return
}
// -----
// CHECK: // {{-----}}
hir.program @p() {
  // CHECK-NEXT: {{.*}}hir_invalid.mlir:[[# @LINE + 1]]:54: error: a team is a slice along didx or didy, not stream
  %p = hir.team_position team [[0, 1], [2, 3]] along stream
  hir.return
}
// -----
// CHECK: // {{-----}}
hir.program @p(%x: !fusion.tensor<f32[4]>, %k: index) {
  // CHECK-NEXT: {{.*}}hir_invalid.mlir:[[# @LINE + 1]]:3: error: 'hir.shift' op hir.shift takes no root
  %w = hir.shift %x -> %x team [0, 1] offset %k root 0 : !fusion.tensor<f32[4]> -> !fusion.tensor<f32[4]>
  hir.return
}
// -----
// CHECK: // {{-----}}
hir.program @p(%x: !fusion.tensor<f32[2 didx, 4], mesh=[0, 1]>, %y: !fusion.tensor<f32[8], mesh=[0, 1]>, %k: index) {
  // CHECK-NEXT: {{.*}}hir_invalid.mlir:[[# @LINE + 1]]:3: error: 'hir.shift' op output has 8 elements but input 4; hir.shift needs equal sizes
  %w = hir.shift %x -> %y team [0, 1] offset %k : !fusion.tensor<f32[2 didx, 4], mesh=[0, 1]> -> !fusion.tensor<f32[8], mesh=[0, 1]>
  hir.return
}
// -----
// CHECK: // {{-----}}
hir.program @p(%x: !fusion.tensor<f32[4]>, %k: index) {
  // CHECK-NEXT: {{.*}}hir_invalid.mlir:[[# @LINE + 1]]:3: error: 'hir.shift' op hir.shift has no copy-engine algorithm (allgather, reduce_scatter and allreduce have)
  %w = hir.shift %x -> %x team [0, 1] offset %k transport copy_engine : !fusion.tensor<f32[4]> -> !fusion.tensor<f32[4]>
  hir.return
}
// -----
// CHECK: // {{-----}}
// hir.local_shard: member j keeps part j of its own input.
hir.program @p(%x: !fusion.tensor<f32[4, 6], mesh=[0, 1]>, %y: !fusion.tensor<f32[4, 6(2 didx, 3)], mesh=[0, 1]>) {
  // CHECK-NEXT: {{.*}}hir_invalid.mlir:[[# @LINE + 1]]:3: error: 'hir.local_shard' op the input's local shape [4, 6] must be the output's [4, 3] with axis 0 2 times as long
  hir.local_shard %x -> %y axis 0 team [0, 1] : !fusion.tensor<f32[4, 6], mesh=[0, 1]> -> !fusion.tensor<f32[4, 6(2 didx, 3)], mesh=[0, 1]>
  hir.return
}
// -----
// CHECK: // {{-----}}
hir.program @p(%x: !fusion.tensor<f32[4, 6], mesh=[0, 1]>, %y: !fusion.tensor<f32[4, 6(2 didx, 3)], mesh=[0, 1]>) {
  // CHECK-NEXT: {{.*}}hir_invalid.mlir:[[# @LINE + 1]]:3: error: 'hir.local_shard' op team [0, 2] names devices [2] that do not hold both buffers (meshes [0, 1])
  hir.local_shard %x -> %y axis 1 team [0, 2] : !fusion.tensor<f32[4, 6], mesh=[0, 1]> -> !fusion.tensor<f32[4, 6(2 didx, 3)], mesh=[0, 1]>
  hir.return
}
// -----
// CHECK: // {{-----}}
hir.program @p(%x: !fusion.tensor<f32[4, 6], mesh=[0, 1]>, %y: !fusion.tensor<f32[4, 6(2 didx, 3), r2], mesh=[0, 1]>) {
  // CHECK-NEXT: {{.*}}hir_invalid.mlir:[[# @LINE + 1]]:3: error: 'hir.local_shard' op axis 2 is not a value axis of the output
  hir.local_shard %x -> %y axis 2 team [0, 1] : !fusion.tensor<f32[4, 6], mesh=[0, 1]> -> !fusion.tensor<f32[4, 6(2 didx, 3), r2], mesh=[0, 1]>
  hir.return
}
// -----
// CHECK: // {{-----}}
// `own`: the two operands of the matmul whose product is this member's part.
hir.program @p(%x: !fusion.tensor<f32[8, 3]>, %a: !fusion.tensor<f32[4, 2]>, %v: !fusion.tensor<f32[48]>) {
  // CHECK-NEXT: {{.*}}hir_invalid.mlir:[[# @LINE + 1]]:3: error: 'hir.allreduce' op `own` takes a matmul's two operands, got 1
  %w = hir.allreduce %x -> %x via %v own(%a : !fusion.tensor<f32[4, 2]>) team [0, 1] op sum transport copy_engine : !fusion.tensor<f32[8, 3]> -> !fusion.tensor<f32[8, 3]>, !fusion.tensor<f32[48]>
  hir.return
}
// -----
// CHECK: // {{-----}}
hir.program @p(%x: !fusion.tensor<f32[8, 3]>, %a: !fusion.tensor<f32[4, 2]>, %b: !fusion.tensor<f32[2, 3]>) {
  // CHECK-NEXT: {{.*}}hir_invalid.mlir:[[# @LINE + 1]]:3: error: 'hir.allreduce' op `own` needs the copy-engine transport and `op sum` (its product is added onto the other members' chunks)
  %w = hir.allreduce %x -> %x own(%a, %b : !fusion.tensor<f32[4, 2]>, !fusion.tensor<f32[2, 3]>) team [0, 1] op sum : !fusion.tensor<f32[8, 3]> -> !fusion.tensor<f32[8, 3]>
  hir.return
}
// -----
// CHECK: // {{-----}}
hir.program @p(%x: !fusion.tensor<f32[8, 3]>, %a: !fusion.tensor<f32[2, 2]>, %b: !fusion.tensor<f32[2, 3]>, %v: !fusion.tensor<f32[48]>) {
  // CHECK-NEXT: {{.*}}hir_invalid.mlir:[[# @LINE + 1]]:3: error: 'hir.allreduce' op `own`'s product has 6 elements per member, but a chunk of the input has 12
  %w = hir.allreduce %x -> %x via %v own(%a, %b : !fusion.tensor<f32[2, 2]>, !fusion.tensor<f32[2, 3]>) team [0, 1] op sum transport copy_engine : !fusion.tensor<f32[8, 3]> -> !fusion.tensor<f32[8, 3]>, !fusion.tensor<f32[48]>
  hir.return
}
// -----
// CHECK: // {{-----}}
hir.program @p(%x: !fusion.tensor<f32[8, 3]>, %a: !fusion.tensor<f32[4, 2]>, %b: !fusion.tensor<f32[2, 2, 3]>, %v: !fusion.tensor<f32[48]>) {
  // CHECK-NEXT: {{.*}}hir_invalid.mlir:[[# @LINE + 1]]:3: error: 'hir.allreduce' op `own` multiplies [4, 2] by [2, 2, 3]: it needs rows of length K and one K x N matrix (its batch axes of one element)
  %w = hir.allreduce %x -> %x via %v own(%a, %b : !fusion.tensor<f32[4, 2]>, !fusion.tensor<f32[2, 2, 3]>) team [0, 1] op sum transport copy_engine : !fusion.tensor<f32[8, 3]> -> !fusion.tensor<f32[8, 3]>, !fusion.tensor<f32[48]>
  hir.return
}
// -----
// CHECK: // {{-----}}
hir.program @p(%x: !fusion.tensor<i32[8, 3]>, %a: !fusion.tensor<i32[4, 2]>, %b: !fusion.tensor<i32[2, 3]>, %v: !fusion.tensor<i32[48]>) {
  // CHECK-NEXT: {{.*}}hir_invalid.mlir:[[# @LINE + 1]]:3: error: 'hir.allreduce' op `own` multiplies i32 matrices; it needs a floating-point type
  %w = hir.allreduce %x -> %x via %v own(%a, %b : !fusion.tensor<i32[4, 2]>, !fusion.tensor<i32[2, 3]>) team [0, 1] op sum transport copy_engine : !fusion.tensor<i32[8, 3]> -> !fusion.tensor<i32[8, 3]>, !fusion.tensor<i32[48]>
  hir.return
}
// -----
// CHECK: // {{-----}}
hir.program @p(%x: !fusion.tensor<f32[4]>, %y: !fusion.tensor<f32[8]>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  // Carried into the loop, a work is waited in its first iteration, but the loop's result
  // (this work where the loop runs no iteration, else the last iteration's) never is.
  // CHECK-NEXT: {{.*}}hir_invalid.mlir:[[# @LINE + 1]]:3: error: 'hir.allgather' op work token %first is never waited (hir.wait %first)
  %first = hir.allgather %x -> %y team [0, 1] : !fusion.tensor<f32[4]> -> !fusion.tensor<f32[8]>
  %last = scf.for %i = %c0 to %c2 step %c1 iter_args(%previous = %first) -> (!hir.work) {
    hir.wait %previous
    %w = hir.allgather %x -> %y team [0, 1] : !fusion.tensor<f32[4]> -> !fusion.tensor<f32[8]>
    scf.yield %w : !hir.work
  }
  hir.return
}
