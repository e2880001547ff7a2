// A global input of shape [3, 8] for f32[2 didx, 8].
// RUN: hostir-run %inputs/host_2ranks.mlir --nproc 2 --inputs %t/x.pt
// SETUP: %t/x.pt = torch.zeros(3, 8)
// EXPECT-ERROR: ^hostir-run: error: (?!.*rank \d+ failed).*argument 0 \(%x\): expected shape \[2, 8\].*got \[3, 8\]
