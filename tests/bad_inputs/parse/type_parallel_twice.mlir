// One axis marked stream twice.
// RUN: hostir-opt %s
// EXPECT-ERROR@+1:49: (?i)expected|stream
%a = hir.allocate : !fusion.tensor<f32[4 stream stream]>
