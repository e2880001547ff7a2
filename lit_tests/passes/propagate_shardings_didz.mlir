// RUN: hostir-opt %s -p propagate-shardings | filecheck %s

// DIDz (the first axis of a 3-D mesh) propagates as DIDx and DIDy do.

// CHECK: %y = fusion.relu %x : {{.*}} -> !fusion.tensor<f32[4(2 didz, 2), 2 didy, 2 didx], mesh={{\[}}{{\[}}[0, 1], [2, 3]], {{\[}}[4, 5], [6, 7]]]>
fusion.func @didz(%x: !fusion.tensor<f32[4(2 didz, 2), 2 didy, 2 didx], mesh=[[[0, 1], [2, 3]], [[4, 5], [6, 7]]]>) -> !fusion.tensor<f32[4, 2, 2]> {
  %y = fusion.relu %x : !fusion.tensor<f32[4(2 didz, 2), 2 didy, 2 didx], mesh=[[[0, 1], [2, 3]], [[4, 5], [6, 7]]]> -> !fusion.tensor<f32[4, 2, 2]>
  fusion.return %y : !fusion.tensor<f32[4, 2, 2]>
}
