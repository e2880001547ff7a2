// --trace into a missing directory failed only after the whole run.
// RUN: hostir-run %inputs/host_2ranks.mlir --trace nodir/t.json
// LIMITS: 10 s, 1 GB
// EXPECT-ERROR: ^hostir-run: error: --trace nodir/t.json: directory nodir does not exist$
