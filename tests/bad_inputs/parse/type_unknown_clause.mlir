// An unknown clause.
// RUN: hostir-opt %s
// EXPECT-ERROR@+1:47: Expected one of 'alloc', 'mesh'
%a = hir.allocate : !fusion.tensor<f32[8, 4], layout=[1, 0]>
