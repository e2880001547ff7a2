// A 90 000-character line with an error at its end: located at that column, no slowdown.
// SETUP: %t/long.mlir = "%a = hir.allocate : !fusion.tensor<f32[" + "1, " * 30000 + "x]>\n"
// RUN: hostir-opt %t/long.mlir
// TIMEOUT: 30
// EXPECT-FILE: %t/long.mlir
// EXPECT-ERROR@1:90040: (?i)expected .*(integer|extent|axis)
