// RUN: hostir-opt %s --print-op-generic | filecheck %s
// RUN: hostir-opt %s --print-op-generic | hostir-opt --print-op-generic | filecheck %s

// The generic form spells out properties; it reads back to the same generic form.

// CHECK: "fusion.func"() <{sym_name = "f", function_type = (!fusion.tensor<f32[4, 2 didx], mesh=[0, 1]>) -> !fusion.tensor<f32[4, r2]>}> ({
// CHECK-NEXT: ^bb{{[0-9]+}}(%a: !fusion.tensor<f32[4, 2 didx], mesh=[0, 1]>):
// CHECK-NEXT: %s = "fusion.reduce"(%a) <{kind = #fusion<reduce_kind sum>, dims = array<i64: 1>}> : (!fusion.tensor<f32[4, 2 didx], mesh=[0, 1]>) -> !fusion.tensor<f32[4, r2]>
// CHECK-NEXT: "fusion.return"(%s) : (!fusion.tensor<f32[4, r2]>) -> ()
fusion.func @f(%a: !fusion.tensor<f32[4, 2 didx], mesh=[0, 1]>) -> !fusion.tensor<f32[4, r2]> {
  %s = fusion.reduce sum %a dims [1] : !fusion.tensor<f32[4, 2 didx], mesh=[0, 1]> -> !fusion.tensor<f32[4, r2]>
  fusion.return %s : !fusion.tensor<f32[4, r2]>
}
// CHECK: "hir.program"() <{sym_name = "main", function_type = (!fusion.tensor<f32[4]>, !fusion.tensor<f32[8]>) -> ()}> ({
// CHECK-NEXT: ^bb{{[0-9]+}}(%x: !fusion.tensor<f32[4]>, %y: !fusion.tensor<f32[8]>):
// CHECK-NEXT: %w = "hir.allgather"(%x, %y) <{team = #hir<team [0, 1]>, operandSegmentSizes = array<i32: 1, 1, 0>, transport = #hir<transport nccl>}> : (!fusion.tensor<f32[4]>, !fusion.tensor<f32[8]>) -> !hir.work
// CHECK-NEXT: %r = "hir.reduce"(%x, %x) <{team = #hir<team [0, 1]>, root = 1 : i64, reduction = #fusion<reduce_kind max>, operandSegmentSizes = array<i32: 1, 1, 0>, transport = #hir<transport nccl>}> : (!fusion.tensor<f32[4]>, !fusion.tensor<f32[4]>) -> !hir.work
// CHECK-NEXT: "hir.wait"(%w) : (!hir.work) -> ()
// CHECK-NEXT: "hir.wait"(%r) : (!hir.work) -> ()
// CHECK-NEXT: %o = "fusion.set"(%x, %x) : (!fusion.tensor<f32[4]>, !fusion.tensor<f32[4]>) -> !fusion.tensor<f32[4]>
// CHECK-NEXT: "hir.return"() : () -> ()
hir.program @main(%x: !fusion.tensor<f32[4]>, %y: !fusion.tensor<f32[8]>) {
  %w = hir.allgather %x -> %y team [0, 1] : !fusion.tensor<f32[4]> -> !fusion.tensor<f32[8]>
  %r = hir.reduce %x -> %x team [0, 1] root 1 op max : !fusion.tensor<f32[4]> -> !fusion.tensor<f32[4]>
  hir.wait %w
  hir.wait %r
  %o = fusion.set %x into %x : !fusion.tensor<f32[4]> -> !fusion.tensor<f32[4]>
  hir.return
}
