// i7 has no torch dtype: the verifier must refuse it, not the runtime.
// RUN: hostir-opt %s
// EXPECT-ERROR@+1:35: unsupported element type i7
%a = hir.allocate : !fusion.tensor<i7[4]>
