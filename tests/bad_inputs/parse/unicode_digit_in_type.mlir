// A full-width digit as an extent.
// RUN: hostir-opt %s
// EXPECT-ERROR@+1:40: (?i)expected .*(integer|extent|axis)|unexpected character
%a = hir.allocate : !fusion.tensor<f32[４, 8]>
