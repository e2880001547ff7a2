// An input file without read permission.
// RUN: hostir-opt %t/locked.mlir
// SETUP: %t/locked.mlir = 'builtin.module {}'
// SETUP: %t/locked.mlir = chmod 000
// EXPECT-SKIP-AS-ROOT: yes
// EXPECT-ERROR: ^error: Permission denied
