// --verify-each-pass-numerically ran the input in hostir-opt's own process, without a
// time limit: 10**12 iterations never ended.
// RUN: hostir-opt %s -p canonicalize --verify-each-pass-numerically --run-timeout 2
// LIMITS: 10 s, 1 GB
// EXPECT-ERROR: ^error: --verify-each-pass-numerically cannot run the input: the 1 rank\(s\) did not finish within 2 s and were stopped$
hir.program @main(%a: !fusion.tensor<f32[4]>) -> !fusion.tensor<f32[4]> {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %n = arith.constant 1000000000000 : index
  scf.for %i = %c0 to %n step %c1 {
    %b = fusion.neg %a : !fusion.tensor<f32[4]> -> !fusion.tensor<f32[4]>
  }
  hir.return %a : !fusion.tensor<f32[4]>
}
