// A split factor larger than the extent.
// RUN: hostir-opt %s
// EXPECT-ERROR@+1:35: split factor 16 does not divide extent 8|[Ss]plit factor
%a = hir.allocate : !fusion.tensor<f32[8(16, 0)]>
