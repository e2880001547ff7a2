// A 3-D mesh.
// RUN: hostir-opt %s
// EXPECT-ERROR@+1:51: (?i)at most 2 dimensions|expected
%a = hir.allocate : !fusion.tensor<f32[4], mesh=[[[0]]]>
