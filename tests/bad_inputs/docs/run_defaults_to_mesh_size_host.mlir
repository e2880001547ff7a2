// hostir-run without --nproc on a 2-device host example runs it on its mesh's 2 ranks.
// RUN: hostir-run %examples/host_programs/host_allgather.mlir
// EXPECT-STDOUT: on 2 rank\(s\)
// EXPECT-STDOUT: max error vs reference 0\b
