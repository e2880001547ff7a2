// An i32 tensor multiplied by an f64 scalar whose result claims i32.
// RUN: hostir-opt %s
fusion.func @f(%a: !fusion.tensor<i32[4]>) -> !fusion.tensor<i32[4]> {
  %s = arith.constant 2.5 : f64
  // EXPECT-ERROR@+1:3: (?i)(scalar|f64|element type|promot)
  %b = fusion.mul %a, %s : !fusion.tensor<i32[4]>, f64 -> !fusion.tensor<i32[4]>
  fusion.return %b : !fusion.tensor<i32[4]>
}
