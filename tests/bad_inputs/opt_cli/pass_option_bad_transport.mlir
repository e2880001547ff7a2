// convert-op-to-communication{transport=mpi}: not a transport hostir knows (the option was `backend` before the copy-engine transport).
// RUN: hostir-opt %inputs/neg.mlir -p 'convert-op-to-communication{transport=mpi}'
// EXPECT-ERROR: ^error: .*(transport|mpi).*(nccl|copy-engine)
