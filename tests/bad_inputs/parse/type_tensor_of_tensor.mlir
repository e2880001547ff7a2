// A builtin tensor as the element type.
// RUN: hostir-opt %s
// EXPECT-ERROR@+1:35: unsupported element type
%a = hir.allocate : !fusion.tensor<tensor<4xf32>[4]>
