// An extent of 2^63, one beyond int64.
// RUN: hostir-opt %s
// EXPECT-ERROR@+1:40: (?i)(64|too large|overflow|does not fit)
%a = hir.allocate : !fusion.tensor<f32[9223372036854775808, 2]>
