// A .pt file holding a list of tensors.
// RUN: hostir-run %inputs/host_2ranks.mlir --nproc 2 --inputs %t/x.pt
// SETUP: %t/x.pt = [torch.zeros(2, 8)]
// EXPECT-ERROR: ^hostir-run: error: (?!.*rank \d+ failed).*(list|not a tensor)
