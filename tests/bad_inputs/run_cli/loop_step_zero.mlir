// An scf.for with step 0 loops forever: the verifier refuses it (scf.for's step must be positive).
// RUN: hostir-run %s --nproc 1
hir.program @main(%x: !fusion.tensor<f32[4]>) -> !fusion.tensor<f32[4]> {
  %c0 = arith.constant 0 : index
  %c4 = arith.constant 4 : index
  // EXPECT-ERROR@+1:3: (?i)step.*(positive|zero|> ?0)
  scf.for %i = %c0 to %c4 step %c0 {
  }
  hir.return %x : !fusion.tensor<f32[4]>
}
