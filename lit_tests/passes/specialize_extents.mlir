// RUN: hostir-opt %s --split-input-file -p 'specialize-extents{extents=16384}' | filecheck %s
// RUN: hostir-opt %s --split-input-file -p specialize-extents | filecheck %s --check-prefix=NONE

// nvFuser's column-parallel input, `define_tensor([-1, 8192])` sharded on its rows: the
// argument's dynamic piece takes 16384 / 2 rows, the gathered copy and the product 16384.
// CHECK-LABEL: fusion.func @allgather_matmul(
// CHECK-SAME:    %x: !fusion.tensor<bf16[16384(2 didx, 8192), 8192], mesh=[0, 1]>
// CHECK-SAME:    -> !fusion.tensor<bf16[16384, 2048(2 didx, 1024), r8192], mesh=[0, 1]>
// CHECK-NEXT:    %g = fusion.set %x : {{.*}} -> !fusion.tensor<bf16[16384, 8192], mesh=[0, 1]>
// CHECK-NEXT:    %y = fusion.matmul %g, %w : {{.*}} -> !fusion.tensor<bf16[16384, 2048(2 didx, 1024), r8192], mesh=[0, 1]>
// NONE-LABEL: fusion.func @allgather_matmul(
// NONE-SAME:    %x: !fusion.tensor<bf16[?(2 didx, ?), 8192], mesh=[0, 1]>
fusion.func @allgather_matmul(%x: !fusion.tensor<bf16[?(2 didx, ?), 8192], mesh=[0, 1]>, %w: !fusion.tensor<bf16[8192, 2048(2 didx, 1024)], mesh=[0, 1]>) -> !fusion.tensor<bf16[?, 2048(2 didx, 1024), r8192], mesh=[0, 1]> {
  %g = fusion.set %x : !fusion.tensor<bf16[?(2 didx, ?), 8192], mesh=[0, 1]> -> !fusion.tensor<bf16[?, 8192], mesh=[0, 1]>
  %y = fusion.matmul %g, %w : !fusion.tensor<bf16[?, 8192], mesh=[0, 1]>, !fusion.tensor<bf16[8192, 2048(2 didx, 1024)], mesh=[0, 1]> -> !fusion.tensor<bf16[?, 2048(2 didx, 1024), r8192], mesh=[0, 1]>
  fusion.return %y : !fusion.tensor<bf16[?, 2048(2 didx, 1024), r8192], mesh=[0, 1]>
}

// -----

// A reduced axis and a reshape's inferred extent (torch's -1): the sum's reduction axis
// takes the argument's extent; the reshape's dynamic axis what its group leaves
// (16384 * 4 / 8).
// CHECK-LABEL: fusion.func @reduce_and_reshape(
// CHECK-SAME:    %x: !fusion.tensor<f32[16384, 4]>
// CHECK-NEXT:    %s = fusion.reduce sum %x dims [0] : {{.*}} -> !fusion.tensor<f32[r16384, 4]>
// CHECK-NEXT:    %r = fusion.reshape %x : {{.*}} -> !fusion.tensor<f32[8192, 8]>
fusion.func @reduce_and_reshape(%x: !fusion.tensor<f32[?, 4]>) -> (!fusion.tensor<f32[r?, 4]>, !fusion.tensor<f32[?, 8]>) {
  %s = fusion.reduce sum %x dims [0] : !fusion.tensor<f32[?, 4]> -> !fusion.tensor<f32[r?, 4]>
  %r = fusion.reshape %x : !fusion.tensor<f32[?, 4]> -> !fusion.tensor<f32[?, 8]>
  fusion.return %s, %r : !fusion.tensor<f32[r?, 4]>, !fusion.tensor<f32[?, 8]>
}

// -----

// An inner split (`t.inner_split(0, 2)`): the dynamic outer piece takes 16384 / 2, and a
// result the program splits itself takes its pieces from the extent too.
// CHECK-LABEL: fusion.func @inner_split(
// CHECK-SAME:    %x: !fusion.tensor<f32[16384(8192, 2 didx)], mesh=[0, 1]>
// CHECK-NEXT:    %y = fusion.set %x : {{.*}} -> !fusion.tensor<f32[16384(4 stream, 4096)], mesh=[0, 1]>
fusion.func @inner_split(%x: !fusion.tensor<f32[?(?, 2 didx)], mesh=[0, 1]>) -> !fusion.tensor<f32[?(4 stream, ?)], mesh=[0, 1]> {
  %y = fusion.set %x : !fusion.tensor<f32[?(?, 2 didx)], mesh=[0, 1]> -> !fusion.tensor<f32[?(4 stream, ?)], mesh=[0, 1]>
  fusion.return %y : !fusion.tensor<f32[?(4 stream, ?)], mesh=[0, 1]>
}
