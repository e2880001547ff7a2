// --verify-each-pass-numerically runs the module before and after every pass on the same
// random inputs; the host programs of this 2-device allgather run on 2 CPU ranks. One line
// on stderr says what was compared.
// RUN: hostir-opt %examples/fusions/allgather.mlir -p hostir-lower --verify-each-pass-numerically -o %t 2>&1 | filecheck %s --check-prefix=KEPT
// KEPT-NOT: error
// KEPT: verify-each-pass-numerically: 15 pass(es) keep the outputs of @allgather (seed 0, host programs on 2 ranks)

// The program lower-to-host makes still holds the allgather as a resharding set, which
// the evaluator refuses: it is not run, and the summary says so.
// RUN: hostir-opt %examples/fusions/allgather.mlir -p propagate-shardings,decompose-reshardings,finalize-multidevice-domains,lower-to-host --verify-each-pass-numerically -o %t 2>&1 | filecheck %s --check-prefix=UNLOWERED
// UNLOWERED: verify-each-pass-numerically: 3 pass(es) keep the outputs of @allgather (seed 0, in one process); not run after pass 'lower-to-host', whose IR still needs communications

// Only the passes after lower-to-host: the comparison starts from the program it made.
// RUN: hostir-opt %examples/fusions/reduction.mlir -p lower-to-host -o %t.host.mlir
// RUN: hostir-opt %t.host.mlir -p insert-deallocations,canonicalize --verify-each-pass-numerically -o %t 2>&1 | filecheck %s --check-prefix=HOST
// HOST: verify-each-pass-numerically: 2 pass(es) keep the outputs of @reduction (seed 0, in one process)

// Random inputs need static shapes: refused at the function, one line, exit code 1.
// RUN: not hostir-opt %s -p hostir-lower --verify-each-pass-numerically 2>&1 | filecheck %s
// CHECK-NOT: Traceback
// CHECK: verify_each_pass_numerically.mlir:[[# @LINE + 2]]:1: error: 'fusion.func' op argument 0 is not a tensor of static shape, so --verify-each-pass-numerically cannot draw a random input for it
// CHECK-NOT: Traceback
fusion.func @dynamic(%x: !fusion.tensor<f32[?, 4]>) -> !fusion.tensor<f32[?, 4]> {
  %y = fusion.neg %x : !fusion.tensor<f32[?, 4]> -> !fusion.tensor<f32[?, 4]>
  fusion.return %y : !fusion.tensor<f32[?, 4]>
}
