// An extent written as a float.
// RUN: hostir-opt %s
// EXPECT-ERROR@+1:40: (?i)expected .*(integer|extent)|integer
%a = hir.allocate : !fusion.tensor<f32[4.5, 8]>
