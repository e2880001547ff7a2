// reduce dims given as an i32 array (generic form): they are i64.
// RUN: hostir-opt %s
fusion.func @f(%a: !fusion.tensor<f32[4, 8]>) -> !fusion.tensor<f32[4, r8]> {
  // EXPECT-ERROR@+1:3: (?i)i64|array|dims
  %b = "fusion.reduce"(%a) <{kind = #fusion<reduce_kind sum>, dims = array<i32: 1>}> : (!fusion.tensor<f32[4, 8]>) -> !fusion.tensor<f32[4, r8]>
  fusion.return %b : !fusion.tensor<f32[4, r8]>
}
