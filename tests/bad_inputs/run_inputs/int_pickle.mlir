// A .pt file holding a Python int.
// RUN: hostir-run %inputs/host_2ranks.mlir --nproc 2 --inputs %t/x.pt
// SETUP: %t/x.pt = 3
// EXPECT-ERROR: ^hostir-run: error: (?!.*rank \d+ failed).*(int|not a tensor)
