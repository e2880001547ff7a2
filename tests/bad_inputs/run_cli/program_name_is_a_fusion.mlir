// --program naming the @reference fusion of a file with host programs.
// RUN: hostir-run %inputs/host_2ranks.mlir --program reference
// EXPECT-ERROR: is a fusion.func but the file holds host programs
