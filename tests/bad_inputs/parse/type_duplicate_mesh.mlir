// Two mesh= clauses: an error, not `the last one wins`.
// RUN: hostir-opt %s
// EXPECT-ERROR@+1:65: (?i)(duplicate|repeated|twice|more than once|already).*mesh|mesh.*(duplicate|twice|more than once|already)
%a = hir.allocate : !fusion.tensor<f32[2 didx, 4], mesh=[0, 1], mesh=[2, 3]>
