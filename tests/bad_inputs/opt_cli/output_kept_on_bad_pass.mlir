// -o onto an existing file with an unknown pass: the file is untouched.
// RUN: hostir-opt %inputs/neg.mlir -p no-such-pass -o %t/out.mlir
// SETUP: %t/out.mlir = 'precious\n'
// KEEP: %t/out.mlir
// EXPECT-ERROR: ^error: unknown pass 'no-such-pass'
