// An empty tensor type.
// RUN: hostir-opt %s
// EXPECT-ERROR@+1:36: (?i)type expected|expected .*type
%a = hir.allocate : !fusion.tensor<>
