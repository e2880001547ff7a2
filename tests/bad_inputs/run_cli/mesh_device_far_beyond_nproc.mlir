// A fusion whose mesh names device 99999999999 run on 2 ranks: refused before lowering
// (whose last pass replays every rank the meshes name) and before spawning, not a hang.
// RUN: hostir-run %s --nproc 2
// EXPECT-ERROR: ^hostir-run: error: (?!.*rank \d+ failed).*mesh \[0, 99999999999\].*--nproc
// TIMEOUT: 30
fusion.func @f(%a: !fusion.tensor<f32[4, 8], mesh=[0, 99999999999]>) -> !fusion.tensor<f32[4, 8], mesh=[0, 99999999999]> {
  %b = fusion.neg %a : !fusion.tensor<f32[4, 8], mesh=[0, 99999999999]> -> !fusion.tensor<f32[4, 8], mesh=[0, 99999999999]>
  fusion.return %b : !fusion.tensor<f32[4, 8], mesh=[0, 99999999999]>
}
