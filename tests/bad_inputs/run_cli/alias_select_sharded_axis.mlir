// alias_select on a device-sharded axis: refused at the op in the user's file.
// RUN: hostir-run %s --nproc 2
hir.program @main(%x: !fusion.tensor<f32[2 didx, 4], mesh=[0, 1]>) -> !fusion.tensor<f32[4], mesh=[0, 1]> {
  %i = arith.constant 0 : index
  // EXPECT-ERROR@+1:3: selects on axis 0, which is sharded across devices
  %v = hir.alias_select %x[%i] axis 0 : !fusion.tensor<f32[2 didx, 4], mesh=[0, 1]> -> !fusion.tensor<f32[4], mesh=[0, 1]>
  hir.return %v : !fusion.tensor<f32[4], mesh=[0, 1]>
}
