// An option given to a pass that takes none.
// RUN: hostir-opt %inputs/neg.mlir -p 'dce{aggressive=true}'
// EXPECT-ERROR: ^error: pass dce has no option 'aggressive'; its options: none$
