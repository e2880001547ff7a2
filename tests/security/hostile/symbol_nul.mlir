// A symbol name that is no ASCII identifier crashed the runtime's compiler (KeyError,
// SyntaxError, ValueError); it runs on 2 ranks, and matches eager torch.
// RUN: hostir-run %s
// LIMITS: 10 s, 1 GB
// EXPECT-STDOUT: ^output 0: shape \[2, 4\] dtype float32 checksum \S+ max error vs reference 0$
// EXPECT-STDOUT: on 2 rank\(s\)$
fusion.func @"\00"(%a: !fusion.tensor<f32[2 didx, 4], mesh=[0, 1]>) -> !fusion.tensor<f32[2 didx, 4], mesh=[0, 1]> {
  %b = fusion.neg %a : !fusion.tensor<f32[2 didx, 4], mesh=[0, 1]> -> !fusion.tensor<f32[2 didx, 4], mesh=[0, 1]>
  fusion.return %b : !fusion.tensor<f32[2 didx, 4], mesh=[0, 1]>
}
