// The README's `-p hostir-lower --disable-pass insert-deallocations --print-ir-after-all --time-passes` on its own fusion (ag_matmul).
// (It used to disable decompose-reshardings, which ag_matmul cannot do without.)
// RUN: hostir-opt %examples/fusions/ag_matmul.mlir -p hostir-lower --disable-pass insert-deallocations --print-ir-after-all --time-passes
// EXPECT-STDERR: IR Dump After lower-to-host
// EXPECT-STDERR: (?i)execution tim
// EXPECT-NOT-STDOUT: hir.deallocate
