// A NUL byte inside an op: located at the byte.
// SETUP: %t/nul.mlir = "fusion.func @f() {\n  fusion.re\x00turn\n}\n"
// RUN: hostir-opt %t/nul.mlir
// EXPECT-FILE: %t/nul.mlir
// EXPECT-ERROR@2:12: (?i)(unexpected|invalid|null) (character|byte)|expected
