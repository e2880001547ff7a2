// An integer option given a word.
// RUN: hostir-opt %inputs/neg.mlir -p 'verify-collective-order{world-size=four}'
// EXPECT-ERROR: ^error: option world-size of pass verify-collective-order takes an integer, got four$
