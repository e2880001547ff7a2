// A 0-d tensor for a 2-d argument.
// RUN: hostir-run %inputs/host_2ranks.mlir --nproc 2 --inputs %t/x.pt
// SETUP: %t/x.pt = torch.tensor(1.0)
// EXPECT-ERROR: ^hostir-run: error: (?!.*rank \d+ failed).*expected shape \[2, 8\]
