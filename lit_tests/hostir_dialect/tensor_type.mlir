// RUN: HOSTIR_ROUNDTRIP
// RUN: HOSTIR_GENERIC_ROUNDTRIP

// Every kind of tensor type prints in its short canonical form and reads back unchanged.

// CHECK-LABEL: builtin.module {
// CHECK-NEXT: %static = hir.allocate : !fusion.tensor<f32[8, 64]>
%static = hir.allocate : !fusion.tensor<f32[8,64]>
// CHECK-NEXT: %rank0 = hir.allocate : !fusion.tensor<f32[]>
%rank0 = hir.allocate : !fusion.tensor<f32[]>
// CHECK-NEXT: %dynamic = hir.allocate : !fusion.tensor<f32[?, 64]>
%dynamic = hir.allocate : !fusion.tensor<f32[?, 64]>
// CHECK-NEXT: %reduction = hir.allocate : !fusion.tensor<f32[8, r64]>
%reduction = hir.allocate : !fusion.tensor<f32[8, r64]>
// CHECK-NEXT: %dyn_reduction = hir.allocate : !fusion.tensor<f32[r?, 4]>
%dyn_reduction = hir.allocate : !fusion.tensor<f32[r?, 4]>
// CHECK-NEXT: %broadcast = hir.allocate : !fusion.tensor<f32[b1, 64]>
%broadcast = hir.allocate : !fusion.tensor<f32[b1, 64]>
// CHECK-NEXT: %stream = hir.allocate : !fusion.tensor<f32[8 stream, 64]>
%stream = hir.allocate : !fusion.tensor<f32[8 stream, 64]>
// An explicit `serial` is the default and is not printed.
// CHECK-NEXT: %serial = hir.allocate : !fusion.tensor<f32[8, 64]>
%serial = hir.allocate : !fusion.tensor<f32[8 serial, 64 serial]>
// CHECK-NEXT: %dyn_stream = hir.allocate : !fusion.tensor<f32[? stream, 64]>
%dyn_stream = hir.allocate : !fusion.tensor<f32[? stream, 64]>
// CHECK-NEXT: %mesh1 = hir.allocate : !fusion.tensor<f32[8, 64], mesh=[3]>
%mesh1 = hir.allocate : !fusion.tensor<f32[8, 64], mesh=[3]>
// CHECK-NEXT: %didx = hir.allocate : !fusion.tensor<f32[2 didx, 64], mesh=[0, 1]>
%didx = hir.allocate : !fusion.tensor<f32[2 didx, 64], mesh=[0,1]>
// CHECK-NEXT: %didx_dyn = hir.allocate : !fusion.tensor<f32[? didx, 64], mesh=[0, 1]>
%didx_dyn = hir.allocate : !fusion.tensor<f32[? didx, 64], mesh=[0, 1]>
// CHECK-NEXT: %mesh2 = hir.allocate : !fusion.tensor<f32[2 didy, 2 didx, 8], mesh=[[0, 1], [2, 3]]>
%mesh2 = hir.allocate : !fusion.tensor<f32[2 didy, 2 didx, 8], mesh=[[0, 1], [2, 3]]>
// CHECK-NEXT: %mesh2_x = hir.allocate : !fusion.tensor<f32[8, 3 didx], mesh=[[0, 1, 2], [3, 4, 5]]>
%mesh2_x = hir.allocate : !fusion.tensor<f32[8, 3 didx], mesh=[[0, 1, 2], [3, 4, 5]]>
// A run of five or more device ids, or rows, prints as `first, ..., last`; fewer are listed.
// CHECK-NEXT: %line = hir.allocate : !fusion.tensor<f32[512 didx, 8], mesh=[0, ..., 511]>
%line = hir.allocate : !fusion.tensor<f32[512 didx, 8], mesh=[0, 1, ..., 510, 511]>
// CHECK-NEXT: %listed = hir.allocate : !fusion.tensor<f32[4 didx], mesh=[4, 5, 6, 7]>
%listed = hir.allocate : !fusion.tensor<f32[4 didx], mesh=[4, ..., 7]>
// CHECK-NEXT: %grid = hir.allocate : !fusion.tensor<f32[8 didy, 64 didx], mesh=[[0, ..., 63], ..., [448, ..., 511]]>
%grid = hir.allocate : !fusion.tensor<f32[8 didy, 64 didx], mesh=[[0, ..., 63], [64, ..., 127], ..., [448, ..., 511]]>
// CHECK-NEXT: %irregular = hir.allocate : !fusion.tensor<f32[7 didx], mesh=[9, 0, ..., 4, 7]>
%irregular = hir.allocate : !fusion.tensor<f32[7 didx], mesh=[9, 0, 1, 2, 3, 4, 7]>
// A 3-D mesh: DIDz is its first axis.
// CHECK-NEXT: %mesh3 = hir.allocate : !fusion.tensor<f32[2 didz, 4(2 didy, 2), 2 didx], mesh={{\[}}{{\[}}[0, 1], [2, 3]], {{\[}}[4, 5], [6, 7]]]>
%mesh3 = hir.allocate : !fusion.tensor<f32[2 didz, 4(2 didy, 2), 2 didx], mesh=[[[0, 1], [2, 3]], [[4, 5], [6, 7]]]>
// A device type on a reduction axis beside an iteration axis: partial sums to reduce-scatter.
// CHECK-NEXT: %partial = hir.allocate : !fusion.tensor<f32[8, 4(2 didx, 2), r8(2 didx, 4)], mesh=[0, 1]>
%partial = hir.allocate : !fusion.tensor<f32[8, 4(2 didx, 2), r8(2 didx, 4)], mesh=[0, 1]>
// CHECK-NEXT: %unsigned = hir.allocate : !fusion.tensor<ui64[2]>
%unsigned = hir.allocate : !fusion.tensor<ui64[2]>
// CHECK-NEXT: %split = hir.allocate : !fusion.tensor<f32[64(2 didx, 32), 8], mesh=[0, 1]>
%split = hir.allocate : !fusion.tensor<f32[64(2 didx, 32), 8], mesh=[0, 1]>
// CHECK-NEXT: %split3 = hir.allocate : !fusion.tensor<f32[64(2 didx, 4 stream, 8)], mesh=[0, 1]>
%split3 = hir.allocate : !fusion.tensor<f32[64(2 didx, 4 stream, 8)], mesh=[0, 1]>
// CHECK-NEXT: %split_serial = hir.allocate : !fusion.tensor<f32[8(2, 4 stream)]>
%split_serial = hir.allocate : !fusion.tensor<f32[8(2 serial, 4 stream)]>
// CHECK-NEXT: %split_dyn = hir.allocate : !fusion.tensor<f32[?(2 didx, ?), 8], mesh=[0, 1]>
%split_dyn = hir.allocate : !fusion.tensor<f32[?(2 didx, ?), 8], mesh=[0, 1]>
// CHECK-NEXT: %split_2d = hir.allocate : !fusion.tensor<f32[8(2 didy, 4), 6(3 didx, 2)], mesh=[[0, 1, 2], [3, 4, 5]]>
%split_2d = hir.allocate : !fusion.tensor<f32[8(2 didy, 4), 6(3 didx, 2)], mesh=[[0, 1, 2], [3, 4, 5]]>
// CHECK-NEXT: %reduction_split = hir.allocate : !fusion.tensor<f32[4, r8(2 didx, 4)], mesh=[0, 1]>
%reduction_split = hir.allocate : !fusion.tensor<f32[4, r8(2 didx, 4)], mesh=[0, 1]>
// CHECK-NEXT: %alloc = hir.allocate : !fusion.tensor<f32[8, 64], alloc=[1, 0]>
%alloc = hir.allocate : !fusion.tensor<f32[8, 64], alloc=[1, 0]>
// The identity allocation order is the default and is not printed.
// CHECK-NEXT: %alloc_identity = hir.allocate : !fusion.tensor<f32[8, 64]>
%alloc_identity = hir.allocate : !fusion.tensor<f32[8, 64], alloc=[0, 1]>
// CHECK-NEXT: %stream_alloc = hir.allocate : !fusion.tensor<f32[8 stream, 64], alloc=[0 stream, 1]>
%stream_alloc = hir.allocate : !fusion.tensor<f32[8 stream, 64], alloc=[0 stream, 1]>
// CHECK-NEXT: %stream_alloc_permuted = hir.allocate : !fusion.tensor<f32[8 stream, 64], alloc=[1, 0 stream]>
%stream_alloc_permuted = hir.allocate : !fusion.tensor<f32[8 stream, 64], alloc=[1, 0 stream]>
// mesh and alloc may come in either order; mesh prints first.
// CHECK-NEXT: %all = hir.allocate : !fusion.tensor<bf16[4 stream, 64(2 didx, 32), 8], mesh=[0, 1], alloc=[2, 0 stream, 1]>
%all = hir.allocate : !fusion.tensor<bf16[4 stream, 64(2 didx, 32), 8], alloc=[2, 0 stream, 1], mesh=[0, 1]>

// Every element type.
// CHECK-NEXT: %f16 = hir.allocate : !fusion.tensor<f16[2]>
%f16 = hir.allocate : !fusion.tensor<f16[2]>
// CHECK-NEXT: %bf16 = hir.allocate : !fusion.tensor<bf16[2]>
%bf16 = hir.allocate : !fusion.tensor<bf16[2]>
// CHECK-NEXT: %f32 = hir.allocate : !fusion.tensor<f32[2]>
%f32 = hir.allocate : !fusion.tensor<f32[2]>
// CHECK-NEXT: %f64 = hir.allocate : !fusion.tensor<f64[2]>
%f64 = hir.allocate : !fusion.tensor<f64[2]>
// CHECK-NEXT: %i1 = hir.allocate : !fusion.tensor<i1[2]>
%i1 = hir.allocate : !fusion.tensor<i1[2]>
// CHECK-NEXT: %i8 = hir.allocate : !fusion.tensor<i8[2]>
%i8 = hir.allocate : !fusion.tensor<i8[2]>
// CHECK-NEXT: %i16 = hir.allocate : !fusion.tensor<i16[2]>
%i16 = hir.allocate : !fusion.tensor<i16[2]>
// CHECK-NEXT: %i32 = hir.allocate : !fusion.tensor<i32[2]>
%i32 = hir.allocate : !fusion.tensor<i32[2]>
// CHECK-NEXT: %i64 = hir.allocate : !fusion.tensor<i64[2]>
%i64 = hir.allocate : !fusion.tensor<i64[2]>
// CHECK-NEXT: %ui8 = hir.allocate : !fusion.tensor<ui8[2]>
%ui8 = hir.allocate : !fusion.tensor<ui8[2]>
// CHECK-NEXT: }
