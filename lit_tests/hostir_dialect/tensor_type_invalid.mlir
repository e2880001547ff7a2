// RUN: HOSTIR_DIAGNOSTICS

// Every problem the tensor type's verifier reports (TensorDesc.problems) and every
// syntax error of its text form, located at the type in the source.


// Element types are floats and integers.
// CHECK: {{.*}}tensor_type_invalid.mlir:[[# @LINE + 1]]:35: error: invalid tensor type: unsupported element type index
%t = hir.allocate : !fusion.tensor<index[4]>
// -----

// CHECK: // {{-----}}
// CHECK-NEXT: {{.*}}tensor_type_invalid.mlir:[[# @LINE + 1]]:35: error: invalid tensor type: device mesh is empty
%t = hir.allocate : !fusion.tensor<f32[4], mesh=[[]]>
// -----

// CHECK: // {{-----}}
// CHECK-NEXT: {{.*}}tensor_type_invalid.mlir:[[# @LINE + 1]]:35: error: invalid tensor type: duplicate device ids in mesh [0, 1, 0]
%t = hir.allocate : !fusion.tensor<f32[4], mesh=[0, 1, 0]>
// -----

// CHECK: // {{-----}}
// CHECK-NEXT: {{.*}}tensor_type_invalid.mlir:[[# @LINE + 1]]:35: error: invalid tensor type: negative device id in mesh [-1, 0]
%t = hir.allocate : !fusion.tensor<f32[4], mesh=[-1, 0]>
// -----

// CHECK: // {{-----}}
// CHECK-NEXT: {{.*}}tensor_type_invalid.mlir:[[# @LINE + 1]]:35: error: invalid tensor type: axis 0 is a broadcast axis of extent 4; broadcast axes have extent 1
%t = hir.allocate : !fusion.tensor<f32[b4]>
// -----

// Outer split factors are static and positive, divide the extent, and leave the innermost piece.
// CHECK: // {{-----}}
// CHECK-NEXT: {{.*}}tensor_type_invalid.mlir:[[# @LINE + 1]]:35: error: invalid tensor type: axis 0: split factor must be a positive static integer, got ?
%t = hir.allocate : !fusion.tensor<f32[8(?, 8)]>
// -----

// CHECK: // {{-----}}
// CHECK-NEXT: {{.*}}tensor_type_invalid.mlir:[[# @LINE + 1]]:35: error: invalid tensor type: axis 0: split factor must be a positive static integer, got 0
%t = hir.allocate : !fusion.tensor<f32[8(0, 8)]>
// -----

// CHECK: // {{-----}}
// CHECK-NEXT: {{.*}}tensor_type_invalid.mlir:[[# @LINE + 1]]:35: error: invalid tensor type: axis 1: split factor 3 does not divide extent 8
%t = hir.allocate : !fusion.tensor<f32[4, 8(3, 3)]>
// -----

// CHECK: // {{-----}}
// CHECK-NEXT: {{.*}}tensor_type_invalid.mlir:[[# @LINE + 1]]:35: error: invalid tensor type: axis 0: innermost piece has extent 3 but the split leaves 4
%t = hir.allocate : !fusion.tensor<f32[8(2, 3)]>
// -----

// CHECK: // {{-----}}
// CHECK-NEXT: {{.*}}tensor_type_invalid.mlir:[[# @LINE + 1]]:35: error: invalid tensor type: axis 0: innermost piece has extent 2 but the split leaves 4
%t = hir.allocate : !fusion.tensor<f32[16(2, 2 stream, 2)]>
// -----

// One piece in parentheses must cover the whole axis.
// CHECK: // {{-----}}
// CHECK-NEXT: {{.*}}tensor_type_invalid.mlir:[[# @LINE + 1]]:35: error: invalid tensor type: axis 0: its one loop axis has extent 3, not the axis extent 8
%t = hir.allocate : !fusion.tensor<f32[8(3)]>
// -----

// At most one axis per parallel type.
// CHECK: // {{-----}}
// CHECK-NEXT: {{.*}}tensor_type_invalid.mlir:[[# @LINE + 1]]:35: error: invalid tensor type: 2 stream axes; at most one is allowed
%t = hir.allocate : !fusion.tensor<f32[8 stream, 4 stream]>
// -----

// CHECK: // {{-----}}
// CHECK-NEXT: {{.*}}tensor_type_invalid.mlir:[[# @LINE + 1]]:35: error: invalid tensor type: 2 stream axes; at most one is allowed
%t = hir.allocate : !fusion.tensor<f32[8(2 stream, 4 stream)]>
// -----

// CHECK: // {{-----}}
// CHECK-NEXT: {{.*}}tensor_type_invalid.mlir:[[# @LINE + 1]]:35: error: invalid tensor type: 2 didx axes; at most one is allowed, and one more on a reduction axis
%t = hir.allocate : !fusion.tensor<f32[2 didx, 2 didx], mesh=[0, 1]>
// -----

// CHECK: // {{-----}}
// CHECK-NEXT: {{.*}}tensor_type_invalid.mlir:[[# @LINE + 1]]:35: error: invalid tensor type: 2 didx axes; at most one is allowed, and one more on a reduction axis
%t = hir.allocate : !fusion.tensor<f32[r2 didx, r2 didx], mesh=[0, 1]>
// -----

// Device-parallel axes need a mesh with a matching axis of matching size.
// CHECK: // {{-----}}
// CHECK-NEXT: {{.*}}tensor_type_invalid.mlir:[[# @LINE + 1]]:35: error: invalid tensor type: didx axis on a tensor without a device mesh
%t = hir.allocate : !fusion.tensor<f32[2 didx, 4]>
// -----

// CHECK: // {{-----}}
// CHECK-NEXT: {{.*}}tensor_type_invalid.mlir:[[# @LINE + 1]]:35: error: invalid tensor type: didx axis on a tensor without a device mesh
%t = hir.allocate : !fusion.tensor<f32[8(2 didx, 4)]>
// -----

// CHECK: // {{-----}}
// CHECK-NEXT: {{.*}}tensor_type_invalid.mlir:[[# @LINE + 1]]:35: error: invalid tensor type: didy axis but mesh [0, 1] has no such axis
%t = hir.allocate : !fusion.tensor<f32[2 didy, 4], mesh=[0, 1]>
// -----

// CHECK: // {{-----}}
// CHECK-NEXT: {{.*}}tensor_type_invalid.mlir:[[# @LINE + 1]]:35: error: invalid tensor type: didz axis but mesh [[0, 1], [2, 3]] has no such axis
%t = hir.allocate : !fusion.tensor<f32[2 didz, 4], mesh=[[0, 1], [2, 3]]>
// -----

// CHECK: // {{-----}}
// CHECK-NEXT: {{.*}}tensor_type_invalid.mlir:[[# @LINE + 1]]:35: error: invalid tensor type: didx axis of extent 4 does not match the 2 devices of mesh [0, 1] along it
%t = hir.allocate : !fusion.tensor<f32[4 didx, 4], mesh=[0, 1]>
// -----

// CHECK: // {{-----}}
// CHECK-NEXT: {{.*}}tensor_type_invalid.mlir:[[# @LINE + 1]]:35: error: invalid tensor type: didy axis of extent 3 does not match the 2 devices of mesh [[0, 1], [2, 3]] along it
%t = hir.allocate : !fusion.tensor<f32[3 didy, 4], mesh=[[0, 1], [2, 3]]>
// -----

// CHECK: // {{-----}}
// CHECK-NEXT: {{.*}}tensor_type_invalid.mlir:[[# @LINE + 1]]:35: error: invalid tensor type: didx axis of extent 4 does not match the 2 devices of mesh [0, 1] along it
%t = hir.allocate : !fusion.tensor<f32[8(4 didx, 2)], mesh=[0, 1]>
// -----

// The allocation order is a permutation of the logical axes.
// CHECK: // {{-----}}
// CHECK-NEXT: {{.*}}tensor_type_invalid.mlir:[[# @LINE + 1]]:35: error: invalid tensor type: allocation order [0, 0] is not a permutation of the 2 logical axes
%t = hir.allocate : !fusion.tensor<f32[8, 4], alloc=[0, 0]>
// -----

// CHECK: // {{-----}}
// CHECK-NEXT: {{.*}}tensor_type_invalid.mlir:[[# @LINE + 1]]:35: error: invalid tensor type: allocation order [0] is not a permutation of the 2 logical axes
%t = hir.allocate : !fusion.tensor<f32[8, 4], alloc=[0]>
// -----

// CHECK: // {{-----}}
// CHECK-NEXT: {{.*}}tensor_type_invalid.mlir:[[# @LINE + 1]]:35: error: invalid tensor type: allocation order [0, 2] is not a permutation of the 2 logical axes
%t = hir.allocate : !fusion.tensor<f32[8, 4], alloc=[0, 2]>
// -----

// A stream marker in `alloc` names the stream axis.
// CHECK: // {{-----}}
// CHECK-NEXT: {{.*}}tensor_type_invalid.mlir:[[# @LINE + 1]]:35: error: invalid tensor type: allocation marks a stream axis but the tensor has none
%t = hir.allocate : !fusion.tensor<f32[8, 4], alloc=[0 stream, 1]>
// -----

// CHECK: // {{-----}}
// CHECK-NEXT: {{.*}}tensor_type_invalid.mlir:[[# @LINE + 1]]:35: error: invalid tensor type: allocation marks axis 1 as stream but the stream axis is 0
%t = hir.allocate : !fusion.tensor<f32[8 stream, 4], alloc=[0, 1 stream]>
// -----

// CHECK: // {{-----}}
// CHECK-NEXT: {{.*}}tensor_type_invalid.mlir:[[# @LINE + 1]]:80: error: allocation marks more than one stream axis
%t = hir.allocate : !fusion.tensor<f32[8 stream, 4], alloc=[0 stream, 1 stream]>
// -----

// Syntax errors in the type.
// CHECK: // {{-----}}
// CHECK-NEXT: {{.*}}tensor_type_invalid.mlir:[[# @LINE + 1]]:49: error: 2-D device mesh rows must have equal lengths
%t = hir.allocate : !fusion.tensor<f32[4], mesh=[[0, 1], [2]]>
// -----

// CHECK: // {{-----}}
// CHECK-NEXT: {{.*}}tensor_type_invalid.mlir:[[# @LINE + 1]]:49: error: expected a device mesh like [0, 1] or [[0, 1], [2, 3]]
%t = hir.allocate : !fusion.tensor<f32[4], mesh=0>
// -----

// CHECK: // {{-----}}
// CHECK-NEXT: {{.*}}tensor_type_invalid.mlir:[[# @LINE + 1]]:35: error: invalid tensor type: device meshes have at most 3 dimensions
%t = hir.allocate : !fusion.tensor<f32[4], mesh=[[[[0]]]]>
// -----

// CHECK: // {{-----}}
// CHECK-NEXT: {{.*}}tensor_type_invalid.mlir:[[# @LINE + 1]]:40: error: Expected integer literal as an extent
%t = hir.allocate : !fusion.tensor<f32[x4]>
// -----

// CHECK: // {{-----}}
// CHECK-NEXT: {{.*}}tensor_type_invalid.mlir:[[# @LINE + 1]]:40: error: Expected integer literal as an extent
%t = hir.allocate : !fusion.tensor<f32[-4]>
// -----

// CHECK: // {{-----}}
// CHECK-NEXT: {{.*}}tensor_type_invalid.mlir:[[# @LINE + 1]]:41: error: Expected '?' after the axis kind
%t = hir.allocate : !fusion.tensor<f32[r]>
// -----

// CHECK: // {{-----}}
// CHECK-NEXT: {{.*}}tensor_type_invalid.mlir:[[# @LINE + 1]]:40: error: expected an axis like `8`, `?`, `r8` or `b1`, got `rx`
%t = hir.allocate : !fusion.tensor<f32[rx]>
// -----

// CHECK: // {{-----}}
// CHECK-NEXT: {{.*}}tensor_type_invalid.mlir:[[# @LINE + 1]]:42: error: Expected `serial`, `stream`, `didx`, `didy`, or `didz`.
%t = hir.allocate : !fusion.tensor<f32[4 vectorize]>
// -----

// CHECK: // {{-----}}
// CHECK-NEXT: {{.*}}tensor_type_invalid.mlir:[[# @LINE + 1]]:44: error: Expected one of 'alloc', 'mesh' in tensor type
%t = hir.allocate : !fusion.tensor<f32[4], shape=[0]>
// -----

// CHECK: // {{-----}}
// CHECK-NEXT: {{.*}}tensor_type_invalid.mlir:[[# @LINE + 1]]:49: error: Expected ')'
%t = hir.allocate : !fusion.tensor<f32[4(2 didx 2)], mesh=[0, 1]>
// -----

// CHECK: // {{-----}}
// CHECK-NEXT: {{.*}}tensor_type_invalid.mlir:[[# @LINE + 1]]:36: error: type expected
%t = hir.allocate : !fusion.tensor<[4]>
// -----

// CHECK: // {{-----}}
// CHECK-NEXT: {{.*}}tensor_type_invalid.mlir:[[# @LINE + 1]]:40: error: '[' expected
%t = hir.allocate : !fusion.tensor<f32 4>
