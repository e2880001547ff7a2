// A dims entry beyond int64 ended in xDSL's struct.error traceback.
// RUN: hostir-opt %s
// LIMITS: 10 s, 1 GB
fusion.func @f(%a: !fusion.tensor<f32[4]>) -> !fusion.tensor<f32[b1, 4]> {
  // EXPECT-ERROR@+1:34: integer -99999999999999999999 does not fit in i64
  %b = fusion.broadcast %a dims [-99999999999999999999] : !fusion.tensor<f32[4]> -> !fusion.tensor<f32[b1, 4]>
  fusion.return %b : !fusion.tensor<f32[b1, 4]>
}
