// A trailing comma after the clauses.
// RUN: hostir-opt %s
// EXPECT-ERROR@+1:57: (?i)expected
%a = hir.allocate : !fusion.tensor<f32[4], mesh=[0, 1], >
