// A .pt file of random bytes.
// RUN: hostir-run %inputs/host_2ranks.mlir --nproc 2 --inputs %t/x.pt
// SETUP: %t/x.pt = b'PK\x03\x04 this is not a zip'
// EXPECT-ERROR: ^hostir-run: error: cannot load .*x.pt
