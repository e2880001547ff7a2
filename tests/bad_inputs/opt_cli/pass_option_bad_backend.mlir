// convert-op-to-communication{backend=mpi}: not a backend hostir knows.
// RUN: hostir-opt %inputs/neg.mlir -p 'convert-op-to-communication{backend=mpi}'
// EXPECT-ERROR: ^error: .*(backend|mpi).*(nccl|gloo|ucc)
