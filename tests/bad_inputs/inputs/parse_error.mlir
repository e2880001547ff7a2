// A parse error on line 2: input for CLI cases.
%a = hir.allocate : !fusion.tensor<f32[8, 4>
