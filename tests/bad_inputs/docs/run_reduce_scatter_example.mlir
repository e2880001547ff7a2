// hostir-run without --nproc on examples/reduce_scatter.mlir.
// RUN: hostir-run %examples/reduce_scatter.mlir
// EXPECT-STDOUT: on 2 rank\(s\)
