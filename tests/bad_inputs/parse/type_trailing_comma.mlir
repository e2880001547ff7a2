// A trailing comma in the axes.
// RUN: hostir-opt %s
// EXPECT-ERROR@+1:43: (?i)expected
%a = hir.allocate : !fusion.tensor<f32[4, ]>
