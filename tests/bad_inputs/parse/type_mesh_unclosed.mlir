// An unclosed mesh.
// RUN: hostir-opt %s
// EXPECT-ERROR@+1:62: (?i)']' expected|expected ']'|expected
%a = hir.allocate : !fusion.tensor<f32[2 didx, 4], mesh=[0, 1>
