// A tensor type without its closing '>'.
// RUN: hostir-opt %s
// EXPECT-ERROR@+1:45: (?i)'>'|expected .*>
%a = hir.allocate : !fusion.tensor<f32[4, 8]
%b = hir.allocate : !fusion.tensor<f32[4]>
