// One alloc entry marked stream twice.
// RUN: hostir-opt %s
// EXPECT-ERROR@+1:70: (?i)expected|stream
%a = hir.allocate : !fusion.tensor<f32[8 stream, 4], alloc=[0 stream stream, 1]>
