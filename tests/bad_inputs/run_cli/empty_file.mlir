// An empty file: nothing to run.
// RUN: hostir-run %t/empty.mlir
// SETUP: %t/empty.mlir = ''
// EXPECT-ERROR: (?i)neither a hir.program nor a fusion.func|nothing to run
