// A device id beyond 64 bits.
// RUN: hostir-opt %s
// EXPECT-ERROR@+1:53: (?i)device id|64|too large|overflow
%a = hir.allocate : !fusion.tensor<f32[4], mesh=[0, 18446744073709551616]>
