// An axis kind that does not exist (x).
// RUN: hostir-opt %s
// EXPECT-ERROR@+1:40: (?i)expected an axis like|expected
%a = hir.allocate : !fusion.tensor<f32[x8]>
