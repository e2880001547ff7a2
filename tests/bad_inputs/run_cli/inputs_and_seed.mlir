// --inputs and --seed together.
// RUN: hostir-run %inputs/host_2ranks.mlir --seed 1 --inputs a.pt
// EXPECT-EXIT: 2
// EXPECT-ERROR: argument --inputs: not allowed with argument --seed
