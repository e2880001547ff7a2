// --nproc 1000000000 was accepted.
// RUN: hostir-run %inputs/neg.mlir --nproc 1000000000
// LIMITS: 10 s, 1 GB
// EXPECT-ERROR: ^hostir-run: error: --nproc 1000000000 is more than the 16 CPU ranks hostir-run spawns \(--max-world\)$
