// One device id of 2**63 - 2 asks for a world of 2**63 - 1 ranks: refused at the
// function, before lowering or spawning (hostir-run grew without end).
// RUN: hostir-run %s
// LIMITS: 10 s, 1 GB
// EXPECT-ERROR@+1:1: 'fusion.func' op uses mesh \[0, 9223372036854775806\], a world of 9223372036854775807 ranks: more than the 16 CPU ranks hostir-run spawns \(--max-world\)
fusion.func @f(%a: !fusion.tensor<f32[2 didx, 4], mesh=[0, 9223372036854775806]>) -> !fusion.tensor<f32[2 didx, 4], mesh=[0, 9223372036854775806]> {
  %b = fusion.neg %a : !fusion.tensor<f32[2 didx, 4], mesh=[0, 9223372036854775806]> -> !fusion.tensor<f32[2 didx, 4], mesh=[0, 9223372036854775806]>
  fusion.return %b : !fusion.tensor<f32[2 didx, 4], mesh=[0, 9223372036854775806]>
}
