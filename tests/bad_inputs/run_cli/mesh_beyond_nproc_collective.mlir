// A 2-device host program run on 1 rank: refused before spawning.
// RUN: hostir-run %inputs/host_2ranks.mlir --nproc 1
// EXPECT-ERROR: ^hostir-run: error: (?!.*rank \d+ failed).*mesh \[0, 1\].*(2 ranks|--nproc)
