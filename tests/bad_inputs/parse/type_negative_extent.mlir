// A negative extent.
// RUN: hostir-opt %s
// EXPECT-ERROR@+1:40: (?i)extent
%a = hir.allocate : !fusion.tensor<f32[-4]>
