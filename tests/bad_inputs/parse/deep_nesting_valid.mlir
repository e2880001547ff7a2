// 150 nested scf.for regions in a host program: valid IR (MLIR nests thousands).
// SETUP: %t/deep.mlir = "hir.program @main() {\n%c0 = arith.constant 0 : index\n%c1 = arith.constant 1 : index\n" + "".join(f"scf.for %i{k} = %c0 to %c1 step %c1 {{\n" for k in range(150)) + "}\n" * 150 + "hir.return\n}\n"
// RUN: hostir-opt %t/deep.mlir
// EXPECT-STDOUT: hir.program @main
