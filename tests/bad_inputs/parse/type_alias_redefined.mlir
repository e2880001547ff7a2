// A type alias defined twice.
// RUN: hostir-opt %s
!t = !fusion.tensor<f32[4]>
// EXPECT-ERROR@+1:1: (?i)redefin|already defined|!t
!t = !fusion.tensor<f32[8]>
%a = hir.allocate : !t
