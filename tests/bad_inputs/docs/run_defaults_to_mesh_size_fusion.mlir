// hostir-run without --nproc on the README's fusion (ag_matmul) runs on 2 ranks.
// RUN: hostir-run %examples/fusions/ag_matmul.mlir
// EXPECT-STDOUT: on 2 rank\(s\)
