// An option hostir-opt does not have: argparse's usage error, exit 2.
// RUN: hostir-opt %inputs/neg.mlir --frobnicate
// EXPECT-EXIT: 2
// EXPECT-ERROR: unrecognized arguments: --frobnicate
