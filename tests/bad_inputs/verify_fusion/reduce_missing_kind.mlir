// A generic reduce without its kind property.
// RUN: hostir-opt %s
fusion.func @f(%a: !fusion.tensor<f32[4, 8]>) -> !fusion.tensor<f32[4, r8]> {
  // EXPECT-ERROR@+1:3: (?i)kind
  %b = "fusion.reduce"(%a) <{dims = array<i64: 1>}> : (!fusion.tensor<f32[4, 8]>) -> !fusion.tensor<f32[4, r8]>
  fusion.return %b : !fusion.tensor<f32[4, r8]>
}
