// An int64 tensor for an f32 argument.
// RUN: hostir-run %inputs/host_2ranks.mlir --nproc 2 --inputs %t/x.pt
// SETUP: %t/x.pt = torch.zeros(2, 8, dtype=torch.int64)
// EXPECT-ERROR: ^hostir-run: error: (?!.*rank \d+ failed).*dtype
