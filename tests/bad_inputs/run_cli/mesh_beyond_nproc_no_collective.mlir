// A mesh of 4 devices run on 2 ranks, no collective: refused (today: uninitialised memory, exit 0).
// RUN: hostir-run %s --nproc 2
// EXPECT-ERROR: ^hostir-run: error: (?!.*rank \d+ failed).*mesh \[0, 1, 2, 3\].*(4 ranks|--nproc)
fusion.func @f(%a: !fusion.tensor<f32[4 didx, 4], mesh=[0, 1, 2, 3]>) -> !fusion.tensor<f32[4 didx, 4], mesh=[0, 1, 2, 3]> {
  %b = fusion.neg %a : !fusion.tensor<f32[4 didx, 4], mesh=[0, 1, 2, 3]> -> !fusion.tensor<f32[4 didx, 4], mesh=[0, 1, 2, 3]>
  fusion.return %b : !fusion.tensor<f32[4 didx, 4], mesh=[0, 1, 2, 3]>
}
