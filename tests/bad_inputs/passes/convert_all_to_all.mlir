// A resharding from axis 0 to axis 1 (an all-to-all): valid, it lowers to hir.all_to_all.
// RUN: hostir-opt %s -p hostir-lower
fusion.func @f(%a: !fusion.tensor<f32[2 didx, 2], mesh=[0, 1]>) -> !fusion.tensor<f32[2, 2 didx], mesh=[0, 1]> {
  %b = fusion.set %a : !fusion.tensor<f32[2 didx, 2], mesh=[0, 1]> -> !fusion.tensor<f32[2, 2 didx], mesh=[0, 1]>
  fusion.return %b : !fusion.tensor<f32[2, 2 didx], mesh=[0, 1]>
}
