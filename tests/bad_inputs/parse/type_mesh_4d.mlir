// A 4-D mesh.
// RUN: hostir-opt %s
// EXPECT-ERROR@+1:35: (?i)at most 3 dimensions
%a = hir.allocate : !fusion.tensor<f32[4], mesh=[[[[0]]]]>
