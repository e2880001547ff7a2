// hostir-run without --nproc on examples/fusions/reduce_scatter.mlir.
// RUN: hostir-run %examples/fusions/reduce_scatter.mlir
// EXPECT-STDOUT: on 2 rank\(s\)
