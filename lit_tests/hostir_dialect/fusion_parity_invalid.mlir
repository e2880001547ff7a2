// RUN: HOSTIR_DIAGNOSTICS

// Every verifier error of the ops nvFuser's multi-device tests use beyond the others
// (fusion_invalid.mlir), located at the op that breaks the rule.

// Concatenated tensors agree on every other axis, on their rank and element type.
fusion.func @f(%a: !fusion.tensor<f32[4, 3]>, %b: !fusion.tensor<f32[5, 3]>) {
  // CHECK: {{.*}}fusion_parity_invalid.mlir:[[# @LINE + 1]]:3: error: 'fusion.cat' op axis 0 has extents [4, 5]; only axis 1 may differ
  %c = fusion.cat %a, %b dim 1 : !fusion.tensor<f32[4, 3]>, !fusion.tensor<f32[5, 3]> -> !fusion.tensor<f32[4, 6]>
  fusion.return
}
// -----
// CHECK: // {{-----}}
fusion.func @f(%a: !fusion.tensor<f32[4, 3]>, %b: !fusion.tensor<f32[4]>) {
  // CHECK-NEXT: {{.*}}fusion_parity_invalid.mlir:[[# @LINE + 1]]:3: error: 'fusion.cat' op cat needs tensors of one rank >= 1, got ranks [1, 2]
  %c = fusion.cat %a, %b dim 0 : !fusion.tensor<f32[4, 3]>, !fusion.tensor<f32[4]> -> !fusion.tensor<f32[8, 3]>
  fusion.return
}
// -----
// CHECK: // {{-----}}
fusion.func @f(%a: !fusion.tensor<f32[4, 3]>, %b: !fusion.tensor<bf16[4, 3]>) {
  // CHECK-NEXT: {{.*}}fusion_parity_invalid.mlir:[[# @LINE + 1]]:3: error: 'fusion.cat' op cat needs one element type, got ['bf16', 'f32']
  %c = fusion.cat %a, %b dim 0 : !fusion.tensor<f32[4, 3]>, !fusion.tensor<bf16[4, 3]> -> !fusion.tensor<f32[8, 3]>
  fusion.return
}
// -----
// CHECK: // {{-----}}
fusion.func @f(%a: !fusion.tensor<f32[4, 3]>) {
  // CHECK-NEXT: {{.*}}fusion_parity_invalid.mlir:[[# @LINE + 1]]:3: error: 'fusion.cat' op cat dim 2 is out of range for rank 2
  %c = fusion.cat %a, %a dim 2 : !fusion.tensor<f32[4, 3]>, !fusion.tensor<f32[4, 3]> -> !fusion.tensor<f32[4, 6]>
  fusion.return
}
// -----
// Only broadcast axes expand; a dynamic extent comes from a tensor that has it.
// CHECK: // {{-----}}
fusion.func @f(%a: !fusion.tensor<f32[4, 3]>) {
  // CHECK-NEXT: {{.*}}fusion_parity_invalid.mlir:[[# @LINE + 1]]:3: error: 'fusion.expand' op result axes [4, 6] do not match the expected [4, 3]
  %e = fusion.expand %a : !fusion.tensor<f32[4, 3]> -> !fusion.tensor<f32[4, 6]>
  fusion.return
}
// -----
// CHECK: // {{-----}}
fusion.func @f(%a: !fusion.tensor<f32[b1, 3]>) {
  // CHECK-NEXT: {{.*}}fusion_parity_invalid.mlir:[[# @LINE + 1]]:3: error: 'fusion.expand' op axis 0 expands to a dynamic extent; take it from a tensor: `like %t axes [..]`
  %e = fusion.expand %a : !fusion.tensor<f32[b1, 3]> -> !fusion.tensor<f32[?, 3]>
  fusion.return
}
// -----
// CHECK: // {{-----}}
fusion.func @f(%a: !fusion.tensor<f32[b1, 3]>, %t: !fusion.tensor<f32[5, 3]>) {
  // CHECK-NEXT: {{.*}}fusion_parity_invalid.mlir:[[# @LINE + 1]]:3: error: 'fusion.expand' op result axis 0 has extent 6 but axis 0 of `like` has 5
  %e = fusion.expand %a like %t axes [0, -1] : !fusion.tensor<f32[b1, 3]>, !fusion.tensor<f32[5, 3]> -> !fusion.tensor<f32[6, 3]>
  fusion.return
}
// -----
// CHECK: // {{-----}}
fusion.func @f(%a: !fusion.tensor<f32[b1, 3]>, %t: !fusion.tensor<f32[?, 3]>) {
  // CHECK-NEXT: {{.*}}fusion_parity_invalid.mlir:[[# @LINE + 1]]:3: error: 'fusion.expand' op axis 1 is not a broadcast axis; only those take an extent from `like`
  %e = fusion.expand %a like %t axes [0, 1] : !fusion.tensor<f32[b1, 3]>, !fusion.tensor<f32[?, 3]> -> !fusion.tensor<f32[?, 3]>
  fusion.return
}
// -----
// A where selects by a predicate between values of the result's type.
// CHECK: // {{-----}}
fusion.func @f(%c: !fusion.tensor<f32[4]>, %a: !fusion.tensor<f32[4]>) {
  // CHECK-NEXT: {{.*}}fusion_parity_invalid.mlir:[[# @LINE + 1]]:3: error: 'fusion.where' op the condition must be a predicate (i1), got !fusion.tensor<f32[4]>
  %w = fusion.where %c, %a, %a : !fusion.tensor<f32[4]>, !fusion.tensor<f32[4]>, !fusion.tensor<f32[4]> -> !fusion.tensor<f32[4]>
  fusion.return
}
// -----
// CHECK: // {{-----}}
fusion.func @f(%c: !fusion.tensor<i1[4]>, %a: !fusion.tensor<f32[4]>, %b: !fusion.tensor<f64[4]>) {
  // CHECK-NEXT: {{.*}}fusion_parity_invalid.mlir:[[# @LINE + 1]]:3: error: 'fusion.where' op operand of type !fusion.tensor<f64[4]> does not have the result's element type f32
  %w = fusion.where %c, %a, %b : !fusion.tensor<i1[4]>, !fusion.tensor<f32[4]>, !fusion.tensor<f64[4]> -> !fusion.tensor<f32[4]>
  fusion.return
}
// -----
// CHECK: // {{-----}}
fusion.func @f(%c: !fusion.tensor<i1[4]>, %a: !fusion.tensor<i32[4]>) {
  %x = arith.constant 0.5 : f64
  // CHECK-NEXT: {{.*}}fusion_parity_invalid.mlir:[[# @LINE + 1]]:3: error: 'fusion.where' op scalar of type f64 does not fit element type i32
  %w = fusion.where %c, %a, %x : !fusion.tensor<i1[4]>, !fusion.tensor<i32[4]>, f64 -> !fusion.tensor<i32[4]>
  fusion.return
}
// -----
// Positional ops: iota makes a vector, triu needs a matrix, random ops draw floats.
// CHECK: // {{-----}}
fusion.func @f() {
  %s = arith.constant 0 : i64
  // CHECK-NEXT: {{.*}}fusion_parity_invalid.mlir:[[# @LINE + 1]]:3: error: 'fusion.iota' op iota makes a tensor of rank 1
  %r = fusion.iota %s, %s : i64, i64 -> !fusion.tensor<i64[2, 4]>
  fusion.return
}
// -----
// CHECK: // {{-----}}
fusion.func @f(%a: !fusion.tensor<f32[4]>) {
  // CHECK-NEXT: {{.*}}fusion_parity_invalid.mlir:[[# @LINE + 1]]:3: error: 'fusion.triu' op triu needs a tensor of rank >= 2, got rank 1
  %r = fusion.triu %a diagonal 0 : !fusion.tensor<f32[4]> -> !fusion.tensor<f32[4]>
  fusion.return
}
// -----
// CHECK: // {{-----}}
fusion.func @f() {
  %lo = arith.constant 0.0 : f64
  // CHECK-NEXT: {{.*}}fusion_parity_invalid.mlir:[[# @LINE + 1]]:3: error: 'fusion.uniform' op uniform makes floating-point numbers, got element type i32
  %r = fusion.uniform %lo, %lo stream 0 : f64, f64 -> !fusion.tensor<i32[4]>
  fusion.return
}
// -----
// CHECK: // {{-----}}
fusion.func @f() {
  %lo = arith.constant 0.0 : f64
  %s = arith.constant 1 : i64
  // CHECK-NEXT: {{.*}}fusion_parity_invalid.mlir:[[# @LINE + 1]]:3: error: 'fusion.uniform' op uniform takes a seed and an offset together, or neither
  %r = fusion.uniform %lo, %lo seed %s stream 0 : f64, f64, i64 -> !fusion.tensor<f32[4]>
  fusion.return
}
// -----
// CHECK: // {{-----}}
fusion.func @f() {
  // CHECK-NEXT: {{.*}}fusion_parity_invalid.mlir:[[# @LINE + 1]]:3: error: 'fusion.rng_seed' op rng_seed makes a tensor of 2 elements: (seed, offset)
  %r = fusion.rng_seed stream 0 : !fusion.tensor<ui64[3]>
  fusion.return
}
// -----
// Mean and variance of floats only.
// CHECK: // {{-----}}
fusion.func @f(%a: !fusion.tensor<i32[4, 3]>) {
  // CHECK-NEXT: {{.*}}fusion_parity_invalid.mlir:[[# @LINE + 1]]:3: error: 'fusion.mean' op fusion.mean takes a floating-point tensor, got i32; cast it first
  %m = fusion.mean %a dims [1] : !fusion.tensor<i32[4, 3]> -> !fusion.tensor<i32[4, r3]>
  fusion.return
}
// -----
// CHECK: // {{-----}}
fusion.func @f(%a: !fusion.tensor<f32[4, 3]>) {
  // CHECK-NEXT: {{.*}}fusion_parity_invalid.mlir:[[# @LINE + 1]]:3: error: 'fusion.var' op var needs at least one axis in dims
  %v = fusion.var %a dims [] correction 1 : !fusion.tensor<f32[4, 3]> -> !fusion.tensor<f32[4, 3]>
  fusion.return
}
// -----
// Grouped GEMMs: the ranks of their grouping, one K, as many groups as offsets.
// CHECK: // {{-----}}
fusion.func @f(%a: !fusion.tensor<f32[12, 6]>, %b: !fusion.tensor<f32[6, 8]>, %o: !fusion.tensor<i32[4]>) {
  // CHECK-NEXT: {{.*}}fusion_parity_invalid.mlir:[[# @LINE + 1]]:3: error: 'fusion.grouped_mm' op grouped_mm groups m needs ranks 2 and 3 (plus as many batch axes on each), got 2 and 2
  %g = fusion.grouped_mm %a, %b, %o groups m : !fusion.tensor<f32[12, 6]>, !fusion.tensor<f32[6, 8]>, !fusion.tensor<i32[4]> -> !fusion.tensor<f32[12, 8, r6]>
  fusion.return
}
// -----
// CHECK: // {{-----}}
fusion.func @f(%a: !fusion.tensor<f32[12, 6]>, %b: !fusion.tensor<f32[4, 5, 8]>, %o: !fusion.tensor<i32[4]>) {
  // CHECK-NEXT: {{.*}}fusion_parity_invalid.mlir:[[# @LINE + 1]]:3: error: 'fusion.grouped_mm' op inner dimensions do not match: a has K=6, b has K=5
  %g = fusion.grouped_mm %a, %b, %o groups m : !fusion.tensor<f32[12, 6]>, !fusion.tensor<f32[4, 5, 8]>, !fusion.tensor<i32[4]> -> !fusion.tensor<f32[12, 8, r6]>
  fusion.return
}
// -----
// CHECK: // {{-----}}
fusion.func @f(%a: !fusion.tensor<f32[12, 6]>, %b: !fusion.tensor<f32[3, 6, 8]>, %o: !fusion.tensor<i32[4]>) {
  // CHECK-NEXT: {{.*}}fusion_parity_invalid.mlir:[[# @LINE + 1]]:3: error: 'fusion.grouped_mm' op b has 3 groups but offsets has 4
  %g = fusion.grouped_mm %a, %b, %o groups m : !fusion.tensor<f32[12, 6]>, !fusion.tensor<f32[3, 6, 8]>, !fusion.tensor<i32[4]> -> !fusion.tensor<f32[12, 8, r6]>
  fusion.return
}
// -----
// CHECK: // {{-----}}
fusion.func @f(%a: !fusion.tensor<f32[12, 6]>, %b: !fusion.tensor<f32[4, 6, 8]>, %o: !fusion.tensor<f32[4]>) {
  // CHECK-NEXT: {{.*}}fusion_parity_invalid.mlir:[[# @LINE + 1]]:3: error: 'fusion.grouped_mm' op offsets must be integers, got f32
  %g = fusion.grouped_mm %a, %b, %o groups m : !fusion.tensor<f32[12, 6]>, !fusion.tensor<f32[4, 6, 8]>, !fusion.tensor<f32[4]> -> !fusion.tensor<f32[12, 8, r6]>
  fusion.return
}
// -----
// Attention: q, k and v share their batch and head axes, k q's head size and v's length;
// the random state is a ui64 seed pair and offset; logsumexp is f32.
// CHECK: // {{-----}}
fusion.func @f(%q: !fusion.tensor<f32[8, 16]>, %rs: !fusion.tensor<ui64[2]>, %ro: !fusion.tensor<ui64[]>) {
  // CHECK-NEXT: {{.*}}fusion_parity_invalid.mlir:[[# @LINE + 1]]:3: error: 'fusion.sdpfa_fwd' op attention needs q, k, v of one rank >= 3, got 2, 2 and 2
  %o = fusion.sdpfa_fwd output %q, %q, %q, %rs, %ro dropout_p 0.0 is_causal false : !fusion.tensor<f32[8, 16]>, !fusion.tensor<f32[8, 16]>, !fusion.tensor<f32[8, 16]>, !fusion.tensor<ui64[2]>, !fusion.tensor<ui64[]> -> !fusion.tensor<f32[8, 16]>
  fusion.return
}
// -----
// CHECK: // {{-----}}
fusion.func @f(%q: !fusion.tensor<f32[2, 8, 16]>, %k: !fusion.tensor<f32[2, 8, 32]>, %rs: !fusion.tensor<ui64[2]>, %ro: !fusion.tensor<ui64[]>) {
  // CHECK-NEXT: {{.*}}fusion_parity_invalid.mlir:[[# @LINE + 1]]:3: error: 'fusion.sdpfa_fwd' op k needs q's head size and v's sequence length
  %o = fusion.sdpfa_fwd output %q, %k, %k, %rs, %ro dropout_p 0.0 is_causal false : !fusion.tensor<f32[2, 8, 16]>, !fusion.tensor<f32[2, 8, 32]>, !fusion.tensor<f32[2, 8, 32]>, !fusion.tensor<ui64[2]>, !fusion.tensor<ui64[]> -> !fusion.tensor<f32[2, 8, 32]>
  fusion.return
}
// -----
// CHECK: // {{-----}}
fusion.func @f(%q: !fusion.tensor<f32[2, 8, 16]>, %rs: !fusion.tensor<ui64[2]>, %ro: !fusion.tensor<ui64[]>) {
  // CHECK-NEXT: {{.*}}fusion_parity_invalid.mlir:[[# @LINE + 1]]:3: error: 'fusion.sdpfa_fwd' op dropout probability 1.0 is not in [0, 1)
  %o = fusion.sdpfa_fwd output %q, %q, %q, %rs, %ro dropout_p 1.0 is_causal false : !fusion.tensor<f32[2, 8, 16]>, !fusion.tensor<f32[2, 8, 16]>, !fusion.tensor<f32[2, 8, 16]>, !fusion.tensor<ui64[2]>, !fusion.tensor<ui64[]> -> !fusion.tensor<f32[2, 8, 16]>
  fusion.return
}
// -----
// CHECK: // {{-----}}
fusion.func @f(%q: !fusion.tensor<f32[2, 8, 16]>, %rs: !fusion.tensor<i64[2]>, %ro: !fusion.tensor<i64[]>) {
  // CHECK-NEXT: {{.*}}fusion_parity_invalid.mlir:[[# @LINE + 1]]:3: error: 'fusion.sdpfa_fwd' op the random state has element type ui64
  %o = fusion.sdpfa_fwd output %q, %q, %q, %rs, %ro dropout_p 0.0 is_causal false : !fusion.tensor<f32[2, 8, 16]>, !fusion.tensor<f32[2, 8, 16]>, !fusion.tensor<f32[2, 8, 16]>, !fusion.tensor<i64[2]>, !fusion.tensor<i64[]> -> !fusion.tensor<f32[2, 8, 16]>
  fusion.return
}
// -----
// CHECK: // {{-----}}
fusion.func @f(%q: !fusion.tensor<bf16[2, 8, 16]>, %rs: !fusion.tensor<ui64[2]>, %ro: !fusion.tensor<ui64[]>) {
  // CHECK-NEXT: {{.*}}fusion_parity_invalid.mlir:[[# @LINE + 1]]:3: error: 'fusion.sdpfa_fwd' op the logsumexp of attention has element type f32
  %l = fusion.sdpfa_fwd logsumexp %q, %q, %q, %rs, %ro dropout_p 0.0 is_causal false : !fusion.tensor<bf16[2, 8, 16]>, !fusion.tensor<bf16[2, 8, 16]>, !fusion.tensor<bf16[2, 8, 16]>, !fusion.tensor<ui64[2]>, !fusion.tensor<ui64[]> -> !fusion.tensor<bf16[2, 8]>
  fusion.return
}
// -----
// CHECK: // {{-----}}
fusion.func @f(%q: !fusion.tensor<f32[2, 8, 16]>, %g: !fusion.tensor<f32[2, 4, 16]>, %l: !fusion.tensor<f32[2, 8]>, %rs: !fusion.tensor<ui64[2]>, %ro: !fusion.tensor<ui64[]>) {
  // CHECK-NEXT: {{.*}}fusion_parity_invalid.mlir:[[# @LINE + 1]]:3: error: 'fusion.sdpfa_bwd' op grad_output has shape [2, 4, 16]; the forward's is [2, 8, 16]
  %d = fusion.sdpfa_bwd query %g, %q, %q, %q, %q, %l, %rs, %ro dropout_p 0.0 is_causal false : !fusion.tensor<f32[2, 4, 16]>, !fusion.tensor<f32[2, 8, 16]>, !fusion.tensor<f32[2, 8, 16]>, !fusion.tensor<f32[2, 8, 16]>, !fusion.tensor<f32[2, 8, 16]>, !fusion.tensor<f32[2, 8]>, !fusion.tensor<ui64[2]>, !fusion.tensor<ui64[]> -> !fusion.tensor<f32[2, 8, 16]>
  fusion.return
}
// -----
// A linear's bias has the stacked weights' axes.
// CHECK: // {{-----}}
fusion.func @f(%x: !fusion.tensor<f32[8, 4]>, %w: !fusion.tensor<f32[2, 3, 4]>, %b: !fusion.tensor<f32[3]>) {
  // CHECK-NEXT: {{.*}}fusion_parity_invalid.mlir:[[# @LINE + 1]]:3: error: 'fusion.linear' op bias must have shape [2, 3] (the weight's without K), got [3]
  %y = fusion.linear %x, %w bias %b : !fusion.tensor<f32[8, 4]>, !fusion.tensor<f32[2, 3, 4]>, !fusion.tensor<f32[3]> -> !fusion.tensor<f32[2, 8, 3, r4]>
  fusion.return
}
