// Extents whose product overflows int64: refused at the type, no storage-overflow traceback.
// RUN: hostir-run %s --nproc 1
// EXPECT-ERROR@+1:34: (?i)(too large|overflow|elements|int64|64)
fusion.func @f(%a: !fusion.tensor<f32[4294967296, 4294967296]>) -> !fusion.tensor<f32[4294967296, 4294967296]> {
  fusion.return %a : !fusion.tensor<f32[4294967296, 4294967296]>
}
