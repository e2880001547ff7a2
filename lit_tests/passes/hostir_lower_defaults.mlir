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

// -----

// matmul+AR at a tensor-parallel size (bf16, 16384 x 8192 x 4096 on 2 devices, 4 chunks,
// each chunk's rows as 2 blocks): the pipeline pays, its all-reduces run on the copy
// engines (beside the loop's matmuls, which NCCL's kernels would slow more), and
// split-by-member computes the peer's block before the post, the own block after it.
!a = !fusion.tensor<bf16[4, 2 didx, 2, 2048, 4096], mesh=[0, 1]>
!b = !fusion.tensor<bf16[2 didx, 4096, 4096], mesh=[0, 1]>
!bb = !fusion.tensor<bf16[b1, 2 didx, b1, 4096, 4096], mesh=[0, 1]>
!u = !fusion.tensor<bf16[4 stream, 2 didx, 2, 2048, 4096, r4096], mesh=[0, 1]>
!c = !fusion.tensor<bf16[4 stream, r2, 2, 2048, 4096], mesh=[0, 1]>
fusion.func @matmul_ar(%a: !a, %b: !b) -> !c {
  %bb = fusion.broadcast %b dims [0, 2] : !b -> !bb
  %u = fusion.matmul %a, %bb : !a, !bb -> !u
  %c = fusion.reduce sum %u dims [1] : !u -> !c
  fusion.return %c : !c
}
// The loop only sends, so order-chunk-compute runs its compute in chunk order: each
// iteration's worker waits for the user's stream, which waited for the previous
// iteration's compute; a loop after it joins the workers. The all-reduce computes this
// member's part itself, onto the others' (`own`: reduce-in-producer), when it is waited,
// and pushes its reduced chunk into the others' symmetric outputs; so the loop is skewed:
// the first chunk is computed and posted before it, each iteration waits for the previous
// chunk's all-reduce after computing its own chunk's peer blocks, and the last chunk's
// all-reduce is waited after the loop. On a team of two the peer pushes its part into the
// output too, so no `via` buffer is allocated.
// CHECK-LABEL: hir.program @matmul_ar
// CHECK:         %c = hir.allocate symmetric
// CHECK:         %user_stream = hir.get_current_stream
// CHECK-NOT:     %via
// CHECK-NEXT:    scf.for
// CHECK:         hir.set_current_stream %[[FIRST:.+]]
// CHECK-NEXT:    hir.synchronize %user_stream
// CHECK:         scf.for %s
// CHECK:           fusion.matmul
// CHECK:         }
// CHECK:         %w = hir.allreduce %u_i -> %c_i own(%a_i_me, %bb_i_me {{.*}} transport copy_engine
// CHECK-NEXT:    hir.set_current_stream %user_stream
// CHECK-NEXT:    hir.synchronize %[[FIRST]]
// CHECK-NEXT:    %second = arith.constant 1 : index
// CHECK-NEXT:    %last = scf.for {{.*}} iter_args(%previous = %w) -> (!hir.work) {
// CHECK:           hir.set_current_stream %[[WORKER:.+]]
// CHECK-NEXT:      hir.synchronize %user_stream
// CHECK:           scf.for %s
// CHECK:             fusion.matmul
// CHECK:           }
// CHECK:           %[[W:.+]] = hir.allreduce {{.*}} own({{.*}} transport copy_engine
// CHECK-NEXT:      hir.set_current_stream %user_stream
// CHECK-NEXT:      hir.synchronize %[[WORKER]]
// CHECK-NEXT:      hir.set_current_stream %[[WORKER]]
// CHECK-NEXT:      hir.wait %previous
// CHECK-NEXT:      hir.set_current_stream %user_stream
// CHECK-NEXT:      scf.yield %[[W]] : !hir.work
// CHECK-NEXT:    }
// CHECK-NEXT:    hir.wait %last
// CHECK-NEXT:    scf.for
// CHECK:           %[[JOINED:.+]] = hir.stream
// CHECK-NEXT:      hir.synchronize %[[JOINED]]
// CHECK-NEXT:    }
// CHECK-NEXT:    hir.deallocate
// NCCL-LABEL: hir.program @matmul_ar
// NCCL:         hir.allreduce
// NCCL-NOT:       transport copy_engine
