// A mesh [0, 40] asks for 41 CPU ranks (7.7 GB spawned before): more than --max-world.
// RUN: hostir-run %s
// LIMITS: 10 s, 1 GB
// EXPECT-ERROR@+1:1: 'fusion.func' op uses mesh \[0, 40\], a world of 41 ranks: more than the 16 CPU ranks hostir-run spawns \(--max-world\)
fusion.func @f(%a: !fusion.tensor<f32[2 didx, 4], mesh=[0, 40]>) -> !fusion.tensor<f32[2 didx, 4], mesh=[0, 40]> {
  %b = fusion.neg %a : !fusion.tensor<f32[2 didx, 4], mesh=[0, 40]> -> !fusion.tensor<f32[2 didx, 4], mesh=[0, 40]>
  fusion.return %b : !fusion.tensor<f32[2 didx, 4], mesh=[0, 40]>
}
