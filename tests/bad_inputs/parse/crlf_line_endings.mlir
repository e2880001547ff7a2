// Windows line endings are whitespace: valid.
// SETUP: %t/crlf.mlir = "fusion.func @f(%a: !fusion.tensor<f32[4]>) -> !fusion.tensor<f32[4]> {\r\n  fusion.return %a : !fusion.tensor<f32[4]>\r\n}\r\n"
// RUN: hostir-opt %t/crlf.mlir
// EXPECT-STDOUT: fusion.func @f
