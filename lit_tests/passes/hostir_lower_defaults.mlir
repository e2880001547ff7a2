// RUN: hostir-opt %s --split-input-file -p hostir-lower | filecheck %s
// RUN: hostir-opt %s --split-input-file -p 'hostir-lower{transport=nccl}' | filecheck %s --check-prefix=NCCL

// By default hostir-lower lets the cost model of the machine decide (docs/copy_engine.md,
// "Choosing"): each collective's transport, and whether a Stream pipeline pays, for a
// program replayed from a CUDA graph. `transport=nccl` keeps NCCL and the pipeline as written.

// AG+matmul at a tensor-parallel size (bf16, 2 x 8192 rows of 8192, N = 4096, 4 chunks):
// the pipeline pays, and its all-gathers run on the copy engines.
!a = !fusion.tensor<bf16[4, 2 didx, 2048, 8192], mesh=[0, 1]>
!b = !fusion.tensor<bf16[8192, 4096], mesh=[0, 1]>
!c = !fusion.tensor<bf16[4 stream, 2, 2048, 4096, r8192], mesh=[0, 1]>
fusion.func @large(%a: !a, %b: !b) -> !c {
  %c = fusion.matmul %a, %b : !a, !b -> !c
  fusion.return %c : !c
}
// CHECK-LABEL: hir.program @large
// CHECK:         scf.for
// CHECK:         scf.for
// CHECK:           hir.allgather {{.*}} transport copy_engine
// CHECK:           fusion.matmul
// NCCL-LABEL: hir.program @large
// NCCL:         scf.for
// NCCL:         scf.for
// NCCL:           hir.allgather
// NCCL-NOT:       transport copy_engine
// NCCL:           fusion.matmul

// -----

// The same at a toy size: four chunks of two rows cost more in latency than they hide,
// so the pipeline is dropped and the program runs whole.
!a = !fusion.tensor<f32[4, 2 didx, 2, 8], mesh=[0, 1]>
!b = !fusion.tensor<f32[8, 4], mesh=[0, 1]>
!c = !fusion.tensor<f32[4 stream, 2, 2, 4, r8], mesh=[0, 1]>
fusion.func @toy(%a: !a, %b: !b) -> !c {
  %c = fusion.matmul %a, %b : !a, !b -> !c
  fusion.return %c : !c
}
// CHECK-LABEL: hir.program @toy
// CHECK-NOT:     scf.for
// CHECK:         hir.allgather
// CHECK:         fusion.matmul
// NCCL-LABEL: hir.program @toy
// NCCL:         scf.for
