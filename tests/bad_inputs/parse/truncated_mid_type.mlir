// The file ends in the middle of a tensor type.
// RUN: hostir-opt %s
// EXPECT-ERROR@5:1: (?i)expected|unexpected end
%a = hir.allocate : !fusion.tensor<f32[4, 
