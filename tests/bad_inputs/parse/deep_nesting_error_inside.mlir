// An unknown op inside 150 nested regions: located diagnostic, no RecursionError.
// SETUP: %t/deep.mlir = "hir.program @main() {\n%c0 = arith.constant 0 : index\n%c1 = arith.constant 1 : index\n" + "".join(f"scf.for %i{k} = %c0 to %c1 step %c1 {{\n" for k in range(150)) + "hir.bogus\n" + "}\n" * 150 + "hir.return\n}\n"
// RUN: hostir-opt %t/deep.mlir
// EXPECT-FILE: %t/deep.mlir
// EXPECT-ERROR@154:1: hir.bogus is not registered
