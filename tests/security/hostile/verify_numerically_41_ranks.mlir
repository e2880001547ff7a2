// The numerical check runs host programs on as many ranks as their devices: not 41.
// RUN: hostir-opt %s -p hostir-lower --verify-each-pass-numerically
// LIMITS: 10 s, 1 GB
// EXPECT-ERROR: ^error: --verify-each-pass-numerically cannot run @f: a world of 41 CPU ranks is more than max_world=16 allows$
fusion.func @f(%a: !fusion.tensor<f32[2 didx, 4], mesh=[0, 40]>) -> !fusion.tensor<f32[2 didx, 4], mesh=[0, 40]> {
  %b = fusion.neg %a : !fusion.tensor<f32[2 didx, 4], mesh=[0, 40]> -> !fusion.tensor<f32[2 didx, 4], mesh=[0, 40]>
  fusion.return %b : !fusion.tensor<f32[2 didx, 4], mesh=[0, 40]>
}
