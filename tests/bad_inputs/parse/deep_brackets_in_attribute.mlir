// 20 000 nested brackets in an attribute: one located diagnostic, no RecursionError.
// SETUP: %t/brackets.mlir = "fusion.func @f() attributes {x = " + "[" * 20000 + "]" * 20000 + "} {\n  fusion.return\n}\n"
// RUN: hostir-opt %t/brackets.mlir
// EXPECT-FILE: %t/brackets.mlir
// EXPECT-ERROR: (?i)nest|deep|recursion limit
// EXPECT-EXIT: 1
