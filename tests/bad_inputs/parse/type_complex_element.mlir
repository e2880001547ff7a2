// A complex element type, which hostir cannot compute with.
// RUN: hostir-opt %s
// EXPECT-ERROR@+1:35: unsupported element type complex<f32>
%a = hir.allocate : !fusion.tensor<complex<f32>[4]>
