// --time-passes when a pass fails: the error, and the timing report of the passes that ran.
// RUN: hostir-opt %examples/fusions/ag_matmul.mlir -p hostir-lower --disable-pass decompose-reshardings --time-passes
// EXPECT-ERROR: 'fusion.matmul' op computes as well as moves data
// EXPECT-STDERR: (?i)execution tim
// EXPECT-STDERR: lower-to-host
