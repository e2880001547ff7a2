// A module with neither a fusion.func nor a hir.program.
// RUN: hostir-opt %s -p hostir-lower
// EXPECT-ERROR: holds neither a fusion.func to lower nor a hir.program
%c = arith.constant 0 : index
