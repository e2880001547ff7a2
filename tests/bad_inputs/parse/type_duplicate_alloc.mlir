// Two alloc= clauses.
// RUN: hostir-opt %s
// EXPECT-ERROR@+1:61: (?i)(duplicate|repeated|twice|more than once|already).*alloc|alloc.*(duplicate|twice|more than once|already)
%a = hir.allocate : !fusion.tensor<f32[8, 4], alloc=[1, 0], alloc=[0, 1]>
