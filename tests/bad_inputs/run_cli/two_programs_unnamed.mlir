// Two programs and no --program.
// RUN: hostir-run tests/bad_inputs/inputs/two_programs.mlir
// EXPECT-ERROR: has 2 programs; name one of @a, @b
