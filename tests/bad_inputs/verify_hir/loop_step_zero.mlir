// An scf.for with a constant step of 0 (MLIR: the step must be positive).
// RUN: hostir-opt %s
hir.program @p() {
  %c0 = arith.constant 0 : index
  %c4 = arith.constant 4 : index
  // EXPECT-ERROR@+1:3: (?i)step.*(positive|zero|> ?0)
  scf.for %i = %c0 to %c4 step %c0 {
  }
  hir.return
}
