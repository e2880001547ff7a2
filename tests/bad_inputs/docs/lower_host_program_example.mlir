// hostir-lower on an example that is already a host program: nothing to lower, exit 0.
// RUN: hostir-opt -p hostir-lower %examples/host_programs/host_allgather_matmul.mlir
// EXPECT-STDOUT: hir.program @main
