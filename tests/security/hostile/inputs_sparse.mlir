// A sparse --inputs tensor ended in a traceback.
// RUN: hostir-run %inputs/host_2ranks.mlir --inputs %t/x.pt
// SETUP: %t/x.pt = torch.zeros(2, 8).to_sparse()
// LIMITS: 10 s, 1 GB
// EXPECT-ERROR: ^hostir-run: error: \S+/x.pt holds a sparse_coo tensor; hostir-run takes dense tensors
