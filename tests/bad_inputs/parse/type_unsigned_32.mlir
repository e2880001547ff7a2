// ui32 has no torch dtype (the runtime would silently use int32).
// RUN: hostir-opt %s
// EXPECT-ERROR@+1:35: unsupported element type ui32
%a = hir.allocate : !fusion.tensor<ui32[4]>
