// A mesh that is a bare integer.
// RUN: hostir-opt %s
// EXPECT-ERROR@+1:57: expected a device mesh like
%a = hir.allocate : !fusion.tensor<f32[2 didx, 4], mesh=0>
