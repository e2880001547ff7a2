// A fusion.func defined inside another one.
// RUN: hostir-opt %s
fusion.func @f(%a: !fusion.tensor<f32[4, 8]>) -> !fusion.tensor<f32[4, 8]> {
  // EXPECT-ERROR@+1:3: (?i)(module|top level|parent|nested)
  fusion.func @g() {
    fusion.return
  }
  %b = fusion.neg %a : !fusion.tensor<f32[4, 8]> -> !fusion.tensor<f32[4, 8]>
  fusion.return %b : !fusion.tensor<f32[4, 8]>
}
