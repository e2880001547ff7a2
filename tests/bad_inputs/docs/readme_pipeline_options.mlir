// The README's `-p hostir-lower --disable-pass decompose-reshardings --print-ir-after-all --time-passes` on its own fusion (ag_matmul).
// RUN: hostir-opt %examples/ag_matmul.mlir -p hostir-lower --disable-pass decompose-reshardings --print-ir-after-all --time-passes
// EXPECT-STDERR: IR Dump After lower-to-host
// EXPECT-STDERR: (?i)execution tim
