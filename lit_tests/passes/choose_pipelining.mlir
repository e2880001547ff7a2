// RUN: hostir-opt %s --split-input-file -p 'propagate-shardings,decompose-reshardings,choose-pipelining{transport=auto}' | filecheck %s
// RUN: hostir-opt %s --split-input-file -p 'propagate-shardings,decompose-reshardings,choose-pipelining{transport=copy-engine}' | filecheck %s --check-prefix=KEEP

// A tiny AG+matmul: each chunk's all-gather and matmul take a few microseconds, less
// than the host's work for one iteration, so the pipeline is dropped: no value keeps
// its Stream axis, and the function's signature follows.
!a = !fusion.tensor<bf16[4 stream, 2 didx, 8, 16], mesh=[0, 1]>
!b = !fusion.tensor<bf16[16, 8], mesh=[0, 1]>
!c = !fusion.tensor<bf16[4 stream, 2, 8, 8, r16], mesh=[0, 1]>
fusion.func @tiny(%a: !a, %b: !b) -> !c {
  %c = fusion.matmul %a, %b : !a, !b -> !c
  fusion.return %c : !c
}
// CHECK-LABEL: fusion.func @tiny
// CHECK-SAME:    (%a: !fusion.tensor<bf16[4, 2 didx, 8, 16], mesh=[0, 1]>, %b: !fusion.tensor<bf16[16, 8], mesh=[0, 1]>) -> !fusion.tensor<bf16[4, 2, 8, 8, r16], mesh=[0, 1]>
// CHECK-NOT:     stream
// CHECK:         fusion.return
// KEEP-LABEL: fusion.func @tiny
// KEEP-SAME:    !fusion.tensor<bf16[4 stream, 2 didx, 8, 16], mesh=[0, 1]>
// KEEP:         fusion.set %a {{.*}}-> !fusion.tensor<bf16[4 stream, 2, 8, 16], mesh=[0, 1]>

// -----

// AG+matmul 16384x8192x1024 on 2 ranks in 2 chunks: the all-gather and the matmul take
// about 0.4 ms each, so overlapping them pays: the pipeline stays.
!a = !fusion.tensor<bf16[2 stream, 2 didx, 4096, 8192], mesh=[0, 1]>
!b = !fusion.tensor<bf16[8192, 1024], mesh=[0, 1]>
!c = !fusion.tensor<bf16[2 stream, 2, 4096, 1024, r8192], mesh=[0, 1]>
fusion.func @large(%a: !a, %b: !b) -> !c {
  %c = fusion.matmul %a, %b : !a, !b -> !c
  fusion.return %c : !c
}
// CHECK-LABEL: fusion.func @large
// CHECK:         fusion.set %a {{.*}}-> !fusion.tensor<bf16[2 stream, 2, 4096, 8192], mesh=[0, 1]>
// CHECK:         fusion.matmul {{.*}}-> !fusion.tensor<bf16[2 stream, 2, 4096, 1024, r8192], mesh=[0, 1]>

// -----

// Without a Stream axis there is nothing to choose.
!a = !fusion.tensor<f32[2 didx, 8], mesh=[0, 1]>
!b = !fusion.tensor<f32[2, 8], mesh=[0, 1]>
fusion.func @unpipelined(%a: !a) -> !b {
  %b = fusion.set %a : !a -> !b
  fusion.return %b : !b
}
// CHECK-LABEL: fusion.func @unpipelined
// CHECK:         fusion.set %a : !fusion.tensor<f32[2 didx, 8], mesh=[0, 1]> -> !fusion.tensor<f32[2, 8], mesh=[0, 1]>
