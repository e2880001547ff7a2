// An element type that does not exist (f33).
// RUN: hostir-opt %s
// EXPECT-ERROR@+1:36: (?i)(type expected|expected .*type|unknown|f33)
%a = hir.allocate : !fusion.tensor<f33[4]>
