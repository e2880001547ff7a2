// A split with no pieces.
// RUN: hostir-opt %s
// EXPECT-ERROR@+1:42: (?i)expected|empty|at least
%a = hir.allocate : !fusion.tensor<f32[8()]>
