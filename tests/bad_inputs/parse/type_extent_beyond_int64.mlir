// An extent of 2^70, beyond int64: torch cannot hold it.
// RUN: hostir-opt %s
// EXPECT-ERROR@+1:40: (?i)extent .*(64|too large|overflow|does not fit)|(64|too large|overflow|does not fit)
%a = hir.allocate : !fusion.tensor<f32[1180591620717411303424]>
