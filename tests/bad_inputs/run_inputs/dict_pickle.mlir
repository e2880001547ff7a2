// A .pt file holding a dict, not a tensor.
// RUN: hostir-run %inputs/host_2ranks.mlir --nproc 2 --inputs %t/x.pt
// SETUP: %t/x.pt = {'x': torch.zeros(2, 8)}
// EXPECT-ERROR: ^hostir-run: error: (?!.*rank \d+ failed).*(dict|not a tensor)
