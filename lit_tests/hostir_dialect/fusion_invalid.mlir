// RUN: HOSTIR_DIAGNOSTICS

// Every verifier error of the fusion dialect, located at the op that breaks the rule.


// Every compute op checks its result axes against its shape rule.
fusion.func @f(%a: !fusion.tensor<f32[8, 4]>) {
  // CHECK: {{.*}}fusion_invalid.mlir:[[# @LINE + 1]]:3: error: 'fusion.set' op result axes [8, 5] do not match the expected [8, 4]
  %b = fusion.set %a : !fusion.tensor<f32[8, 4]> -> !fusion.tensor<f32[8, 5]>
  fusion.return
}
// -----
// CHECK: // {{-----}}
fusion.func @f(%a: !fusion.tensor<f32[8, 4]>) {
  // CHECK-NEXT: {{.*}}fusion_invalid.mlir:[[# @LINE + 1]]:3: error: 'fusion.exp' op result axes [8] do not match the expected [8, 4]
  %b = fusion.exp %a : !fusion.tensor<f32[8, 4]> -> !fusion.tensor<f32[8]>
  fusion.return
}
// -----

// A reduction axis of the input is not part of its value.
// CHECK: // {{-----}}
fusion.func @f(%a: !fusion.tensor<f32[8, r4]>) {
  // CHECK-NEXT: {{.*}}fusion_invalid.mlir:[[# @LINE + 1]]:3: error: 'fusion.neg' op result axes [8, r4] do not match the expected [8]
  %b = fusion.neg %a : !fusion.tensor<f32[8, r4]> -> !fusion.tensor<f32[8, r4]>
  fusion.return
}
// -----

// Reduced axes must be marked reduction in the result.
// CHECK: // {{-----}}
fusion.func @f(%a: !fusion.tensor<f32[8, 4]>) {
  // CHECK-NEXT: {{.*}}fusion_invalid.mlir:[[# @LINE + 1]]:3: error: 'fusion.reduce' op result axes [8, 4] do not match the expected [8, r4]
  %b = fusion.reduce sum %a dims [1] : !fusion.tensor<f32[8, 4]> -> !fusion.tensor<f32[8, 4]>
  fusion.return
}
// -----

// Broadcast flags of the result.
// CHECK: // {{-----}}
fusion.func @f(%a: !fusion.tensor<f32[8, 4]>) {
  // CHECK-NEXT: {{.*}}fusion_invalid.mlir:[[# @LINE + 1]]:3: error: 'fusion.broadcast' op result axes [1, 8, 4] do not match the expected [b1, 8, 4]
  %b = fusion.broadcast %a dims [0] : !fusion.tensor<f32[8, 4]> -> !fusion.tensor<f32[1, 8, 4]>
  fusion.return
}
// -----

// A copy keeps the element type (only fusion.cast changes it).
// CHECK: // {{-----}}
fusion.func @f(%a: !fusion.tensor<f32[8, 4]>) {
  // CHECK-NEXT: {{.*}}fusion_invalid.mlir:[[# @LINE + 1]]:3: error: 'fusion.set' op result element type bf16 differs from the input's f32
  %b = fusion.set %a : !fusion.tensor<f32[8, 4]> -> !fusion.tensor<bf16[8, 4]>
  fusion.return
}
// -----
// CHECK: // {{-----}}
fusion.func @f(%a: !fusion.tensor<f32[8, 4]>, %b: !fusion.tensor<bf16[8, 4]>) {
  // CHECK-NEXT: {{.*}}fusion_invalid.mlir:[[# @LINE + 1]]:3: error: 'fusion.add' op tensor operands have different element types ['bf16', 'f32']; cast one first
  %c = fusion.add %a, %b : !fusion.tensor<f32[8, 4]>, !fusion.tensor<bf16[8, 4]> -> !fusion.tensor<f32[8, 4]>
  fusion.return
}
// -----
// CHECK: // {{-----}}
fusion.func @f(%a: !fusion.tensor<f32[8, 4]>) {
  // CHECK-NEXT: {{.*}}fusion_invalid.mlir:[[# @LINE + 1]]:3: error: 'fusion.add' op result element type must be f32, got f16
  %c = fusion.add %a, %a : !fusion.tensor<f32[8, 4]>, !fusion.tensor<f32[8, 4]> -> !fusion.tensor<f16[8, 4]>
  fusion.return
}
// -----

// Comparisons return i1.
// CHECK: // {{-----}}
fusion.func @f(%a: !fusion.tensor<f32[8, 4]>) {
  // CHECK-NEXT: {{.*}}fusion_invalid.mlir:[[# @LINE + 1]]:3: error: 'fusion.lt' op result element type must be i1, got f32
  %c = fusion.lt %a, %a : !fusion.tensor<f32[8, 4]>, !fusion.tensor<f32[8, 4]> -> !fusion.tensor<f32[8, 4]>
  fusion.return
}
// -----

// Elementwise operands: equal ranks, equal extents or broadcast axes.
// CHECK: // {{-----}}
fusion.func @f(%a: !fusion.tensor<f32[8, 4]>, %b: !fusion.tensor<f32[4]>) {
  // CHECK-NEXT: {{.*}}fusion_invalid.mlir:[[# @LINE + 1]]:3: error: 'fusion.add' op fusion.add: operands have different ranks [1, 2]
  %c = fusion.add %a, %b : !fusion.tensor<f32[8, 4]>, !fusion.tensor<f32[4]> -> !fusion.tensor<f32[8, 4]>
  fusion.return
}
// -----
// CHECK: // {{-----}}
fusion.func @f(%a: !fusion.tensor<f32[8, 4]>, %b: !fusion.tensor<f32[8, 2]>) {
  // CHECK-NEXT: {{.*}}fusion_invalid.mlir:[[# @LINE + 1]]:3: error: 'fusion.mul' op fusion.mul axis 1: extents 4 and 2 are not broadcast-compatible
  %c = fusion.mul %a, %b : !fusion.tensor<f32[8, 4]>, !fusion.tensor<f32[8, 2]> -> !fusion.tensor<f32[8, 4]>
  fusion.return
}
// -----
// CHECK: // {{-----}}
fusion.func @f(%s: f32) {
  // CHECK-NEXT: {{.*}}fusion_invalid.mlir:[[# @LINE + 1]]:3: error: 'fusion.add' op at least one operand must be a tensor
  %c = fusion.add %s, %s : f32, f32 -> !fusion.tensor<f32[4]>
  fusion.return
}
// -----
// CHECK: // {{-----}}
hir.program @p(%a: !fusion.tensor<f32[8, 4]>) {
  %s = hir.get_current_stream
  // CHECK-NEXT: {{.*}}fusion_invalid.mlir:[[# @LINE + 1]]:3: error: 'fusion.add' op operand of type !hir.stream is neither a tensor nor a scalar
  %c = fusion.add %a, %s : !fusion.tensor<f32[8, 4]>, !hir.stream -> !fusion.tensor<f32[8, 4]>
  hir.return
}
// -----
// CHECK: // {{-----}}
// CHECK-NEXT: {{.*}}fusion_invalid.mlir:[[# @LINE + 1]]:1: error: 'fusion.func' op argument 1 must be a tensor or a scalar, got !hir.stream
fusion.func @f(%a: !fusion.tensor<f32[8, 4]>, %s: !hir.stream) {
  fusion.return
}
// -----
// CHECK: // {{-----}}
fusion.func @f(%a: !fusion.tensor<f32[8, 4]>) {
  // CHECK-NEXT: {{.*}}fusion_invalid.mlir:[[# @LINE + 1]]:3: error: 'fusion.permute' op dims [0, 0] is not a permutation of 2 axes
  %b = fusion.permute %a dims [0, 0] : !fusion.tensor<f32[8, 4]> -> !fusion.tensor<f32[8, 8]>
  fusion.return
}
// -----
// CHECK: // {{-----}}
fusion.func @f(%a: !fusion.tensor<f32[8, 4]>) {
  // CHECK-NEXT: {{.*}}fusion_invalid.mlir:[[# @LINE + 1]]:3: error: 'fusion.permute' op dims [1] is not a permutation of 2 axes
  %b = fusion.permute %a dims [1] : !fusion.tensor<f32[8, 4]> -> !fusion.tensor<f32[4]>
  fusion.return
}
// -----
// CHECK: // {{-----}}
fusion.func @f(%a: !fusion.tensor<f32[8, 4]>) {
  // CHECK-NEXT: {{.*}}fusion_invalid.mlir:[[# @LINE + 1]]:3: error: 'fusion.reshape' op cannot reshape [8, 4] (32 elements) to [30] (30 elements)
  %b = fusion.reshape %a : !fusion.tensor<f32[8, 4]> -> !fusion.tensor<f32[30]>
  fusion.return
}
// -----
// CHECK: // {{-----}}
fusion.func @f(%a: !fusion.tensor<f32[8, 4]>) {
  // CHECK-NEXT: {{.*}}fusion_invalid.mlir:[[# @LINE + 1]]:3: error: 'fusion.reshape' op a reshape result has no reduction axes
  %b = fusion.reshape %a : !fusion.tensor<f32[8, 4]> -> !fusion.tensor<f32[32, r1]>
  fusion.return
}
// -----
// CHECK: // {{-----}}
fusion.func @f(%a: !fusion.tensor<f32[8, 4]>) {
  // CHECK-NEXT: {{.*}}fusion_invalid.mlir:[[# @LINE + 1]]:3: error: 'fusion.broadcast' op broadcast dim 3 is out of range for rank 3
  %b = fusion.broadcast %a dims [3] : !fusion.tensor<f32[8, 4]> -> !fusion.tensor<f32[8, 4, b1]>
  fusion.return
}
// -----
// CHECK: // {{-----}}
fusion.func @f(%a: !fusion.tensor<f32[8, 4]>) {
  // CHECK-NEXT: {{.*}}fusion_invalid.mlir:[[# @LINE + 1]]:3: error: 'fusion.broadcast' op broadcast dims [0, -4] repeat an axis
  %b = fusion.broadcast %a dims [0, -4] : !fusion.tensor<f32[8, 4]> -> !fusion.tensor<f32[b1, b1, 8, 4]>
  fusion.return
}
// -----
// CHECK: // {{-----}}
fusion.func @f(%a: !fusion.tensor<f32[8, 4]>) {
  // CHECK-NEXT: {{.*}}fusion_invalid.mlir:[[# @LINE + 1]]:3: error: 'fusion.squeeze' op cannot squeeze axis 0 of extent 8; only extent-1 axes
  %b = fusion.squeeze %a dims [0] : !fusion.tensor<f32[8, 4]> -> !fusion.tensor<f32[4]>
  fusion.return
}
// -----
// CHECK: // {{-----}}
fusion.func @f(%a: !fusion.tensor<f32[b1, 4]>) {
  // CHECK-NEXT: {{.*}}fusion_invalid.mlir:[[# @LINE + 1]]:3: error: 'fusion.squeeze' op squeeze dim 2 is out of range for rank 2
  %b = fusion.squeeze %a dims [2] : !fusion.tensor<f32[b1, 4]> -> !fusion.tensor<f32[4]>
  fusion.return
}
// -----
// CHECK: // {{-----}}
fusion.func @f(%a: !fusion.tensor<f32[8, 4]>) {
  // CHECK-NEXT: {{.*}}fusion_invalid.mlir:[[# @LINE + 1]]:3: error: 'fusion.reduce' op reduce needs at least one axis in dims
  %b = fusion.reduce sum %a dims [] : !fusion.tensor<f32[8, 4]> -> !fusion.tensor<f32[8, 4]>
  fusion.return
}
// -----
// CHECK: // {{-----}}
fusion.func @f(%a: !fusion.tensor<f32[8, 4]>) {
  // CHECK-NEXT: {{.*}}fusion_invalid.mlir:[[# @LINE + 1]]:3: error: 'fusion.reduce' op reduction axis 2 is out of range for rank 2
  %b = fusion.reduce max %a dims [2] : !fusion.tensor<f32[8, 4]> -> !fusion.tensor<f32[8, r4]>
  fusion.return
}
// -----
// CHECK: // {{-----}}
fusion.func @f(%a: !fusion.tensor<f32[8, 4]>) {
  // CHECK-NEXT: {{.*}}fusion_invalid.mlir:[[# @LINE + 1]]:3: error: 'fusion.reduce' op reduction dims [1, -1] repeat an axis
  %b = fusion.reduce min %a dims [1, -1] : !fusion.tensor<f32[8, 4]> -> !fusion.tensor<f32[8, r4]>
  fusion.return
}
// -----
// CHECK: // {{-----}}
fusion.func @f(%a: !fusion.tensor<f32[8, 4]>) {
  // CHECK-NEXT: {{.*}}fusion_invalid.mlir:[[# @LINE + 1]]:22: error: Expected `sum`, `prod`, `max`, or `min`.
  %b = fusion.reduce avg %a dims [1] : !fusion.tensor<f32[8, 4]> -> !fusion.tensor<f32[8, r4]>
  fusion.return
}
// -----
// CHECK: // {{-----}}
fusion.func @f(%a: !fusion.tensor<f32[]>, %b: !fusion.tensor<f32[4, 2]>) {
  // CHECK-NEXT: {{.*}}fusion_invalid.mlir:[[# @LINE + 1]]:3: error: 'fusion.matmul' op matmul operands must have rank >= {{[12]}}, got 0 and 2
  %c = fusion.matmul %a, %b : !fusion.tensor<f32[]>, !fusion.tensor<f32[4, 2]> -> !fusion.tensor<f32[2, r4]>
  fusion.return
}
// -----
// CHECK: // {{-----}}
fusion.func @f(%a: !fusion.tensor<f32[8, 4]>, %b: !fusion.tensor<f32[8, 2]>) {
  // CHECK-NEXT: {{.*}}fusion_invalid.mlir:[[# @LINE + 1]]:3: error: 'fusion.matmul' op inner dimensions do not match: a has K=4, b has K=8
  %c = fusion.matmul %a, %b : !fusion.tensor<f32[8, 4]>, !fusion.tensor<f32[8, 2]> -> !fusion.tensor<f32[8, 2, r4]>
  fusion.return
}
// -----

// Batch axes align from the right, as in torch.matmul.
// CHECK: // {{-----}}
fusion.func @f(%a: !fusion.tensor<f32[7, 3, 8, 4]>, %b: !fusion.tensor<f32[2, 4, 2]>) {
  // CHECK-NEXT: {{.*}}fusion_invalid.mlir:[[# @LINE + 1]]:3: error: 'fusion.matmul' op matmul batch axis 0: extents 3 and 2 are not broadcast-compatible
  %c = fusion.matmul %a, %b : !fusion.tensor<f32[7, 3, 8, 4]>, !fusion.tensor<f32[2, 4, 2]> -> !fusion.tensor<f32[7, 3, 8, 2, r4]>
  fusion.return
}
// -----
// CHECK: // {{-----}}
fusion.func @f(%a: !fusion.tensor<f32[8, 4]>, %b: !fusion.tensor<f32[3, 4, 2]>) {
  // CHECK-NEXT: {{.*}}fusion_invalid.mlir:[[# @LINE + 1]]:3: error: 'fusion.matmul' op result axes [8, 2, r4] do not match the expected [3, 8, 2, r4]
  %c = fusion.matmul %a, %b : !fusion.tensor<f32[8, 4]>, !fusion.tensor<f32[3, 4, 2]> -> !fusion.tensor<f32[8, 2, r4]>
  fusion.return
}
// -----
// CHECK: // {{-----}}
fusion.func @f(%a: !fusion.tensor<f32[3, 8, 4]>, %b: !fusion.tensor<f32[2, 4, 2]>) {
  // CHECK-NEXT: {{.*}}fusion_invalid.mlir:[[# @LINE + 1]]:3: error: 'fusion.matmul' op matmul batch axis 0: extents 3 and 2 are not broadcast-compatible
  %c = fusion.matmul %a, %b : !fusion.tensor<f32[3, 8, 4]>, !fusion.tensor<f32[2, 4, 2]> -> !fusion.tensor<f32[3, 8, 2, r4]>
  fusion.return
}
// -----
// CHECK: // {{-----}}
fusion.func @f(%a: !fusion.tensor<f32[8, 4]>, %b: !fusion.tensor<bf16[4, 2]>) {
  // CHECK-NEXT: {{.*}}fusion_invalid.mlir:[[# @LINE + 1]]:3: error: 'fusion.matmul' op matmul operands have different element types
  %c = fusion.matmul %a, %b : !fusion.tensor<f32[8, 4]>, !fusion.tensor<bf16[4, 2]> -> !fusion.tensor<f32[8, 2, r4]>
  fusion.return
}
// -----
// CHECK: // {{-----}}
fusion.func @f(%a: !fusion.tensor<f32[8, 4]>, %b: !fusion.tensor<f32[4, 2]>) {
  // CHECK-NEXT: {{.*}}fusion_invalid.mlir:[[# @LINE + 1]]:3: error: 'fusion.matmul' op result element type f16 differs from the input's f32
  %c = fusion.matmul %a, %b : !fusion.tensor<f32[8, 4]>, !fusion.tensor<f32[4, 2]> -> !fusion.tensor<f16[8, 2, r4]>
  fusion.return
}
// -----
// CHECK: // {{-----}}
fusion.func @f(%a: !fusion.tensor<f32[8, 4]>, %w: !fusion.tensor<f32[4]>) {
  // CHECK-NEXT: {{.*}}fusion_invalid.mlir:[[# @LINE + 1]]:3: error: 'fusion.linear' op linear needs an input of rank >= 1 and a [.., N, K] weight, got ranks 2 and 1
  %c = fusion.linear %a, %w : !fusion.tensor<f32[8, 4]>, !fusion.tensor<f32[4]> -> !fusion.tensor<f32[8, r4]>
  fusion.return
}
// -----
// A stack of weights comes first in the result; its bias has the stack's axes too.
// CHECK: // {{-----}}
fusion.func @f(%a: !fusion.tensor<f32[8, 4]>, %w: !fusion.tensor<f32[3, 2, 4]>) {
  // CHECK-NEXT: {{.*}}fusion_invalid.mlir:[[# @LINE + 1]]:3: error: 'fusion.linear' op result axes [8, 3, r4] do not match the expected [3, 8, 2, r4]
  %c = fusion.linear %a, %w : !fusion.tensor<f32[8, 4]>, !fusion.tensor<f32[3, 2, 4]> -> !fusion.tensor<f32[8, 3, r4]>
  fusion.return
}
// -----
// CHECK: // {{-----}}
fusion.func @f(%a: !fusion.tensor<f32[8, 4]>, %w: !fusion.tensor<f32[3, 2, 4]>, %b: !fusion.tensor<f32[2]>) {
  // CHECK-NEXT: {{.*}}fusion_invalid.mlir:[[# @LINE + 1]]:3: error: 'fusion.linear' op bias must have shape [3, 2] (the weight's without K), got [2]
  %c = fusion.linear %a, %w bias %b : !fusion.tensor<f32[8, 4]>, !fusion.tensor<f32[3, 2, 4]>, !fusion.tensor<f32[2]> -> !fusion.tensor<f32[3, 8, 2, r4]>
  fusion.return
}
// -----
// CHECK: // {{-----}}
fusion.func @f(%a: !fusion.tensor<f32[]>, %w: !fusion.tensor<f32[3, 4]>) {
  // CHECK-NEXT: {{.*}}fusion_invalid.mlir:[[# @LINE + 1]]:3: error: 'fusion.linear' op linear needs an input of rank >= 1 and a [.., N, K] weight, got ranks 0 and 2
  %c = fusion.linear %a, %w : !fusion.tensor<f32[]>, !fusion.tensor<f32[3, 4]> -> !fusion.tensor<f32[3, r4]>
  fusion.return
}
// -----
// CHECK: // {{-----}}
fusion.func @f(%a: !fusion.tensor<f32[8, 4]>, %w: !fusion.tensor<f32[3, 5]>) {
  // CHECK-NEXT: {{.*}}fusion_invalid.mlir:[[# @LINE + 1]]:3: error: 'fusion.linear' op inner dimensions do not match: input has K=4, weight has K=5
  %c = fusion.linear %a, %w : !fusion.tensor<f32[8, 4]>, !fusion.tensor<f32[3, 5]> -> !fusion.tensor<f32[8, 3, r4]>
  fusion.return
}
// -----
// CHECK: // {{-----}}
fusion.func @f(%a: !fusion.tensor<f32[8, 4]>, %w: !fusion.tensor<f32[3, 4]>, %bias: !fusion.tensor<f32[4]>) {
  // CHECK-NEXT: {{.*}}fusion_invalid.mlir:[[# @LINE + 1]]:3: error: 'fusion.linear' op bias must have shape [3] (the weight's without K), got [4]
  %c = fusion.linear %a, %w bias %bias : !fusion.tensor<f32[8, 4]>, !fusion.tensor<f32[3, 4]>, !fusion.tensor<f32[4]> -> !fusion.tensor<f32[8, 3, r4]>
  fusion.return
}
// -----
// CHECK: // {{-----}}
fusion.func @f(%a: !fusion.tensor<f32[8, 4]>, %w: !fusion.tensor<f32[3, 4]>, %bias: !fusion.tensor<f32[1, 3]>) {
  // CHECK-NEXT: {{.*}}fusion_invalid.mlir:[[# @LINE + 1]]:3: error: 'fusion.linear' op bias must have shape [3] (the weight's without K), got [1, 3]
  %c = fusion.linear %a, %w bias %bias : !fusion.tensor<f32[8, 4]>, !fusion.tensor<f32[3, 4]>, !fusion.tensor<f32[1, 3]> -> !fusion.tensor<f32[8, 3, r4]>
  fusion.return
}
// -----
// CHECK: // {{-----}}
fusion.func @f(%a: !fusion.tensor<f32[8, 4]>) {
  // CHECK-NEXT: {{.*}}fusion_invalid.mlir:[[# @LINE + 1]]:3: error: 'fusion.slice' op starts, stops and steps need one entry per axis (2)
  %b = fusion.slice %a starts [0] stops [8] steps [1] : !fusion.tensor<f32[8, 4]> -> !fusion.tensor<f32[8]>
  fusion.return
}
// -----
// CHECK: // {{-----}}
fusion.func @f(%a: !fusion.tensor<f32[8, 4]>) {
  // CHECK-NEXT: {{.*}}fusion_invalid.mlir:[[# @LINE + 1]]:3: error: 'fusion.slice' op axis 1: step 0 must be positive
  %b = fusion.slice %a starts [0, 0] stops [8, 4] steps [1, 0] : !fusion.tensor<f32[8, 4]> -> !fusion.tensor<f32[8, 4]>
  fusion.return
}
// -----
// CHECK: // {{-----}}
fusion.func @f(%a: !fusion.tensor<f32[8, 4]>) {
  // CHECK-NEXT: {{.*}}fusion_invalid.mlir:[[# @LINE + 1]]:3: error: 'fusion.slice' op axis 0: slice [0, 9) is out of bounds for extent 8
  %b = fusion.slice %a starts [0, 0] stops [9, 4] steps [1, 1] : !fusion.tensor<f32[8, 4]> -> !fusion.tensor<f32[9, 4]>
  fusion.return
}
// -----
// CHECK: // {{-----}}
fusion.func @f(%a: !fusion.tensor<f32[8, 4]>) {
  // CHECK-NEXT: {{.*}}fusion_invalid.mlir:[[# @LINE + 1]]:3: error: 'fusion.slice' op axis 1: slice [3, 2) is out of bounds for extent 4
  %b = fusion.slice %a starts [0, 3] stops [8, 2] steps [1, 1] : !fusion.tensor<f32[8, 4]> -> !fusion.tensor<f32[8, 0]>
  fusion.return
}
// -----
// CHECK: // {{-----}}
fusion.func @f(%a: !fusion.tensor<f32[8, 4]>) {
  // CHECK-NEXT: {{.*}}fusion_invalid.mlir:[[# @LINE + 1]]:3: error: 'fusion.slice' op axis 0: slice [-1, 8) is out of bounds for extent 8
  %b = fusion.slice %a starts [-1, 0] stops [8, 4] steps [1, 1] : !fusion.tensor<f32[8, 4]> -> !fusion.tensor<f32[9, 4]>
  fusion.return
}
// -----
// CHECK: // {{-----}}
fusion.func @f(%a: !fusion.tensor<f32[8, 4]>, %i: index) {
  // CHECK-NEXT: {{.*}}fusion_invalid.mlir:[[# @LINE + 1]]:3: error: 'fusion.select' op select dim 2 is out of range for rank 2
  %b = fusion.select %a[%i] dim 2 : !fusion.tensor<f32[8, 4]>, index -> !fusion.tensor<f32[8]>
  fusion.return
}
// -----
// CHECK: // {{-----}}
fusion.func @f(%a: !fusion.tensor<f32[8, 4]>, %i: f32) {
  // CHECK-NEXT: {{.*}}fusion_invalid.mlir:[[# @LINE + 1]]:3: error: Unexpected attribute f32
  %b = fusion.select %a[%i] dim 0 : !fusion.tensor<f32[8, 4]>, f32 -> !fusion.tensor<f32[4]>
  fusion.return
}
// -----

// The destination has the result type.
// CHECK: // {{-----}}
hir.program @p(%a: !fusion.tensor<f32[8, 4]>) {
  %o = hir.allocate : !fusion.tensor<f32[4, 8]>
  // CHECK-NEXT: {{.*}}fusion_invalid.mlir:[[# @LINE + 1]]:27: error: operand is used with type !fusion.tensor<f32[8, 4]>, but has been previously used or defined with type !fusion.tensor<f32[4, 8]>
  %b = fusion.set %a into %o : !fusion.tensor<f32[8, 4]> -> !fusion.tensor<f32[8, 4]>
  hir.return
}
// -----
// CHECK: // {{-----}}
hir.program @p(%a: !fusion.tensor<f32[8, 4]>) {
  %o = hir.allocate : !fusion.tensor<f32[4, 8]>
  // CHECK-NEXT: {{.*}}fusion_invalid.mlir:[[# @LINE + 1]]:3: error: 'fusion.set' op attribute !fusion.tensor<f32[4, 8]> expected from variable 'R', but got !fusion.tensor<f32[8, 4]>
  %b = "fusion.set"(%a, %o) : (!fusion.tensor<f32[8, 4]>, !fusion.tensor<f32[4, 8]>) -> !fusion.tensor<f32[8, 4]>
  hir.return
}
// -----

// fusion.func / fusion.return.
// CHECK: // {{-----}}
// CHECK-NEXT: {{.*}}fusion_invalid.mlir:[[# @LINE + 1]]:1: error: 'fusion.func' op returned types (!fusion.tensor<f32[8, 4]>, !fusion.tensor<f32[8, 4]>) do not match the declared results (!fusion.tensor<f32[8, 4]>)
fusion.func @f(%a: !fusion.tensor<f32[8, 4]>) -> !fusion.tensor<f32[8, 4]> {
  %b = fusion.neg %a : !fusion.tensor<f32[8, 4]> -> !fusion.tensor<f32[8, 4]>
  fusion.return %a, %b : !fusion.tensor<f32[8, 4]>, !fusion.tensor<f32[8, 4]>
}
// -----
// CHECK: // {{-----}}
// CHECK-NEXT: {{.*}}fusion_invalid.mlir:[[# @LINE + 1]]:1: error: 'fusion.func' op body must end with fusion.return
fusion.func @f(%a: !fusion.tensor<f32[8, 4]>) -> !fusion.tensor<f32[8, 4]> {
  %b = fusion.neg %a : !fusion.tensor<f32[8, 4]> -> !fusion.tensor<f32[8, 4]>
}
// -----
// CHECK: // {{-----}}
// CHECK-NEXT: {{.*}}fusion_invalid.mlir:[[# @LINE + 1]]:1: error: 'fusion.func' op entry block arguments do not match the function's input types
"fusion.func"() <{sym_name = "f", function_type = (!fusion.tensor<f32[8, 4]>) -> ()}> ({
^bb0(%a: !fusion.tensor<f32[4]>):
  "fusion.return"() : () -> ()
}) : () -> ()
// -----
// CHECK: // {{-----}}
// CHECK-NEXT: {{.*}}fusion_invalid.mlir:[[# @LINE + 1]]:1: error: 'fusion.return' op 'fusion.return' expects parent op 'fusion.func'
fusion.return
// -----
// CHECK: // {{-----}}
// CHECK-NEXT: {{.*}}fusion_invalid.mlir:[[# @LINE + 1]]:1: error: 'fusion.func' op body must end with fusion.return
fusion.func @f() {
  hir.return
}
// -----

// Symbols are unique in a module (reported at the second definition, as MLIR does).
// CHECK: // {{-----}}
// CHECK-NEXT: {{.*}}fusion_invalid.mlir:[[# @LINE + 4]]:1: error: 'fusion.func' op redefinition of symbol named 'f'
fusion.func @f() {
  fusion.return
}
fusion.func @f() {
  fusion.return
}

// -----

// CHECK: // {{-----}}
fusion.func @gelu_of_integers(%a: !fusion.tensor<i32[4]>) -> !fusion.tensor<i32[4]> {
  // CHECK-NEXT: {{.*}}fusion_invalid.mlir:[[# @LINE + 1]]:3: error: 'fusion.gelu' op fusion.gelu takes a floating-point tensor, got i32; cast it first
  %b = fusion.gelu tanh %a : !fusion.tensor<i32[4]> -> !fusion.tensor<i32[4]>
  fusion.return %b : !fusion.tensor<i32[4]>
}
