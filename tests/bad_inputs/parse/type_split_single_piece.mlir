// A split with one piece that is not the whole axis.
// RUN: hostir-opt %s
// EXPECT-ERROR@+1:35: its one loop axis has extent 2, not the axis extent 8|[Ss]plit
%a = hir.allocate : !fusion.tensor<f32[8(2)]>
