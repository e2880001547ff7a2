// An i7 tensor reaches the runtime: refused at the type in the user's file.
// RUN: hostir-run %s --nproc 1
// EXPECT-ERROR@+1:34: unsupported element type i7
fusion.func @f(%a: !fusion.tensor<i7[4]>) -> !fusion.tensor<i7[4]> {
  fusion.return %a : !fusion.tensor<i7[4]>
}
