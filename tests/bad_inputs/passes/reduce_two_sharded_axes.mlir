// A reduction over two device-parallel axes of a 2-D mesh.
// RUN: hostir-opt %s -p hostir-lower
fusion.func @f(%a: !fusion.tensor<f32[2 didy, 2 didx, 4], mesh=[[0, 1], [2, 3]]>) -> !fusion.tensor<f32[r2, r2, 4], mesh=[[0, 1], [2, 3]]> {
  // EXPECT-ERROR@+1:3: (?i)more than one device-parallel axis|not supported
  %b = fusion.reduce sum %a dims [0, 1] : !fusion.tensor<f32[2 didy, 2 didx, 4], mesh=[[0, 1], [2, 3]]> -> !fusion.tensor<f32[r2, r2, 4], mesh=[[0, 1], [2, 3]]>
  fusion.return %b : !fusion.tensor<f32[r2, r2, 4], mesh=[[0, 1], [2, 3]]>
}
