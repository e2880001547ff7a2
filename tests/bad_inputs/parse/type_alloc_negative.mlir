// A negative axis in alloc.
// RUN: hostir-opt %s
// EXPECT-ERROR@+1:54: (?i)expected|negative|permutation
%a = hir.allocate : !fusion.tensor<f32[8, 4], alloc=[-1, 0]>
