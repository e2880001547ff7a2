// The file ends inside a generic op's operand list.
// RUN: hostir-opt %s
// EXPECT-ERROR@5:1: (?i)expected
%a = "hir.allocate"(
