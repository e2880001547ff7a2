// RUN: HOSTIR_ROUNDTRIP
// RUN: HOSTIR_GENERIC_ROUNDTRIP

// The ops nvFuser's multi-device tests use beyond the others (fusion_ops.mlir), in their
// custom syntax.

// Concatenation: the extents along `dim` add up.
// CHECK-LABEL: fusion.func @cat(%a: !fusion.tensor<f32[4, 3]>, %b: !fusion.tensor<f32[4, 5]>, %d: !fusion.tensor<f32[?, 5]>) {
fusion.func @cat(%a: !fusion.tensor<f32[4, 3]>, %b: !fusion.tensor<f32[4, 5]>, %d: !fusion.tensor<f32[?, 5]>) {
  // CHECK-NEXT: %cat = fusion.cat %a, %b dim 1 : !fusion.tensor<f32[4, 3]>, !fusion.tensor<f32[4, 5]> -> !fusion.tensor<f32[4, 8]>
  %cat = fusion.cat %a, %b dim 1 : !fusion.tensor<f32[4, 3]>, !fusion.tensor<f32[4, 5]> -> !fusion.tensor<f32[4, 8]>
  // CHECK-NEXT: %rows = fusion.cat %b, %d dim 0 : !fusion.tensor<f32[4, 5]>, !fusion.tensor<f32[?, 5]> -> !fusion.tensor<f32[?, 5]>
  %rows = fusion.cat %b, %d dim 0 : !fusion.tensor<f32[4, 5]>, !fusion.tensor<f32[?, 5]> -> !fusion.tensor<f32[?, 5]>
  // CHECK-NEXT: fusion.return
  fusion.return
}
// Expansion of broadcast axes: to static extents, or to those of another tensor.
// CHECK-LABEL: fusion.func @expand(%c: !fusion.tensor<f32[b1, 5]>, %t: !fusion.tensor<f32[?, 7]>) {
fusion.func @expand(%c: !fusion.tensor<f32[b1, 5]>, %t: !fusion.tensor<f32[?, 7]>) {
  // CHECK-NEXT: %e = fusion.expand %c : !fusion.tensor<f32[b1, 5]> -> !fusion.tensor<f32[6, 5]>
  %e = fusion.expand %c : !fusion.tensor<f32[b1, 5]> -> !fusion.tensor<f32[6, 5]>
  // CHECK-NEXT: %e2 = fusion.expand %c like %t axes [0, -1] : !fusion.tensor<f32[b1, 5]>, !fusion.tensor<f32[?, 7]> -> !fusion.tensor<f32[?, 5]>
  %e2 = fusion.expand %c like %t axes [0, -1] : !fusion.tensor<f32[b1, 5]>, !fusion.tensor<f32[?, 7]> -> !fusion.tensor<f32[?, 5]>
  // CHECK-NEXT: fusion.return
  fusion.return
}
// Selection by a predicate; scalars of a kind no higher than the result's.
// CHECK-LABEL: fusion.func @where(%p: !fusion.tensor<i1[4, 5]>, %b: !fusion.tensor<f32[4, 5]>, %c: !fusion.tensor<f32[b1, 5]>) {
fusion.func @where(%p: !fusion.tensor<i1[4, 5]>, %b: !fusion.tensor<f32[4, 5]>, %c: !fusion.tensor<f32[b1, 5]>) {
  // CHECK-NEXT: %zero = arith.constant 0.000000e+00 : f64
  %zero = arith.constant 0.000000e+00 : f64
  // CHECK-NEXT: %wh = fusion.where %p, %b, %zero : !fusion.tensor<i1[4, 5]>, !fusion.tensor<f32[4, 5]>, f64 -> !fusion.tensor<f32[4, 5]>
  %wh = fusion.where %p, %b, %zero : !fusion.tensor<i1[4, 5]>, !fusion.tensor<f32[4, 5]>, f64 -> !fusion.tensor<f32[4, 5]>
  // CHECK-NEXT: %wb = fusion.where %p, %c, %b : !fusion.tensor<i1[4, 5]>, !fusion.tensor<f32[b1, 5]>, !fusion.tensor<f32[4, 5]> -> !fusion.tensor<f32[4, 5]>
  %wb = fusion.where %p, %c, %b : !fusion.tensor<i1[4, 5]>, !fusion.tensor<f32[b1, 5]>, !fusion.tensor<f32[4, 5]> -> !fusion.tensor<f32[4, 5]>
  // CHECK-NEXT: fusion.return
  fusion.return
}
// Positional ops: an index, a triangle, random numbers and the random state.
// CHECK-LABEL: fusion.func @positional(%b: !fusion.tensor<f32[4, 5]>) {
fusion.func @positional(%b: !fusion.tensor<f32[4, 5]>) {
  // CHECK-NEXT: %s0 = arith.constant 0 : i64
  %s0 = arith.constant 0 : i64
  // CHECK-NEXT: %s1 = arith.constant 2 : i64
  %s1 = arith.constant 2 : i64
  // CHECK-NEXT: %io = fusion.iota %s0, %s1 : i64, i64 -> !fusion.tensor<i64[8]>
  %io = fusion.iota %s0, %s1 : i64, i64 -> !fusion.tensor<i64[8]>
  // CHECK-NEXT: %tr = fusion.triu %b diagonal 1 : !fusion.tensor<f32[4, 5]> -> !fusion.tensor<f32[4, 5]>
  %tr = fusion.triu %b diagonal 1 : !fusion.tensor<f32[4, 5]> -> !fusion.tensor<f32[4, 5]>
  // CHECK-NEXT: %lo = arith.constant 0.000000e+00 : f64
  %lo = arith.constant 0.000000e+00 : f64
  // CHECK-NEXT: %hi = arith.constant 1.000000e+00 : f64
  %hi = arith.constant 1.000000e+00 : f64
  // CHECK-NEXT: %u = fusion.uniform %lo, %hi stream 0 : f64, f64 -> !fusion.tensor<bf16[4, 5]>
  %u = fusion.uniform %lo, %hi stream 0 : f64, f64 -> !fusion.tensor<bf16[4, 5]>
  // CHECK-NEXT: %u2 = fusion.uniform %lo, %hi seed %s0 offset %s1 stream 1 : f64, f64, i64, i64 -> !fusion.tensor<f32[4, 5]>
  %u2 = fusion.uniform %lo, %hi seed %s0 offset %s1 stream 1 : f64, f64, i64, i64 -> !fusion.tensor<f32[4, 5]>
  // CHECK-NEXT: %rs = fusion.rng_seed stream 2 : !fusion.tensor<ui64[2]>
  %rs = fusion.rng_seed stream 2 : !fusion.tensor<ui64[2]>
  // CHECK-NEXT: fusion.return
  fusion.return
}
// Mean and variance: the reduced axes stay as reduction axes.
// CHECK-LABEL: fusion.func @statistics(%b: !fusion.tensor<f32[4, 5]>) {
fusion.func @statistics(%b: !fusion.tensor<f32[4, 5]>) {
  // CHECK-NEXT: %m = fusion.mean %b dims [1] : !fusion.tensor<f32[4, 5]> -> !fusion.tensor<f32[4, r5]>
  %m = fusion.mean %b dims [1] : !fusion.tensor<f32[4, 5]> -> !fusion.tensor<f32[4, r5]>
  // CHECK-NEXT: %v = fusion.var %b dims [0, 1] correction 0 : !fusion.tensor<f32[4, 5]> -> !fusion.tensor<f32[r4, r5]>
  %v = fusion.var %b dims [0, 1] correction 0 : !fusion.tensor<f32[4, 5]> -> !fusion.tensor<f32[r4, r5]>
  // CHECK-NEXT: fusion.return
  fusion.return
}
// Grouped GEMMs: M, N or K in groups, with batch axes in front.
// CHECK-LABEL: fusion.func @grouped_mm(%x: !fusion.tensor<bf16[12, 6]>, %w: !fusion.tensor<bf16[4, 6, 8]>, %o: !fusion.tensor<i32[4]>, %y: !fusion.tensor<bf16[4, 3, 6]>, %z: !fusion.tensor<bf16[6, 12]>, %bx: !fusion.tensor<bf16[2, 12, 6]>, %bw: !fusion.tensor<bf16[2, 4, 6, 8]>) {
fusion.func @grouped_mm(%x: !fusion.tensor<bf16[12, 6]>, %w: !fusion.tensor<bf16[4, 6, 8]>, %o: !fusion.tensor<i32[4]>, %y: !fusion.tensor<bf16[4, 3, 6]>, %z: !fusion.tensor<bf16[6, 12]>, %bx: !fusion.tensor<bf16[2, 12, 6]>, %bw: !fusion.tensor<bf16[2, 4, 6, 8]>) {
  // CHECK-NEXT: %gm = fusion.grouped_mm %x, %w, %o groups m : !fusion.tensor<bf16[12, 6]>, !fusion.tensor<bf16[4, 6, 8]>, !fusion.tensor<i32[4]> -> !fusion.tensor<bf16[12, 8, r6]>
  %gm = fusion.grouped_mm %x, %w, %o groups m : !fusion.tensor<bf16[12, 6]>, !fusion.tensor<bf16[4, 6, 8]>, !fusion.tensor<i32[4]> -> !fusion.tensor<bf16[12, 8, r6]>
  // CHECK-NEXT: %gn = fusion.grouped_mm %y, %z, %o groups n : !fusion.tensor<bf16[4, 3, 6]>, !fusion.tensor<bf16[6, 12]>, !fusion.tensor<i32[4]> -> !fusion.tensor<bf16[3, 12, r6]>
  %gn = fusion.grouped_mm %y, %z, %o groups n : !fusion.tensor<bf16[4, 3, 6]>, !fusion.tensor<bf16[6, 12]>, !fusion.tensor<i32[4]> -> !fusion.tensor<bf16[3, 12, r6]>
  // CHECK-NEXT: %gk = fusion.grouped_mm %z, %x, %o groups k : !fusion.tensor<bf16[6, 12]>, !fusion.tensor<bf16[12, 6]>, !fusion.tensor<i32[4]> -> !fusion.tensor<bf16[4, 6, 6, r12]>
  %gk = fusion.grouped_mm %z, %x, %o groups k : !fusion.tensor<bf16[6, 12]>, !fusion.tensor<bf16[12, 6]>, !fusion.tensor<i32[4]> -> !fusion.tensor<bf16[4, 6, 6, r12]>
  // CHECK-NEXT: %gb = fusion.grouped_mm %bx, %bw, %o groups m : !fusion.tensor<bf16[2, 12, 6]>, !fusion.tensor<bf16[2, 4, 6, 8]>, !fusion.tensor<i32[4]> -> !fusion.tensor<bf16[2, 12, 8, r6]>
  %gb = fusion.grouped_mm %bx, %bw, %o groups m : !fusion.tensor<bf16[2, 12, 6]>, !fusion.tensor<bf16[2, 4, 6, 8]>, !fusion.tensor<i32[4]> -> !fusion.tensor<bf16[2, 12, 8, r6]>
  // CHECK-NEXT: fusion.return
  fusion.return
}
// Fused attention, forward and backward, one result per op.
// CHECK-LABEL: fusion.func @attention(%q: !fusion.tensor<f32[2, 4, 8, 16]>, %k: !fusion.tensor<f32[2, 4, 6, 16]>, %v: !fusion.tensor<f32[2, 4, 6, 32]>, %g: !fusion.tensor<f32[2, 4, 8, 32]>, %rs: !fusion.tensor<ui64[2]>, %ro: !fusion.tensor<ui64[]>) {
fusion.func @attention(%q: !fusion.tensor<f32[2, 4, 8, 16]>, %k: !fusion.tensor<f32[2, 4, 6, 16]>, %v: !fusion.tensor<f32[2, 4, 6, 32]>, %g: !fusion.tensor<f32[2, 4, 8, 32]>, %rs: !fusion.tensor<ui64[2]>, %ro: !fusion.tensor<ui64[]>) {
  // CHECK-NEXT: %at = fusion.sdpfa_fwd output %q, %k, %v, %rs, %ro dropout_p 0.000000e+00 is_causal true : !fusion.tensor<f32[2, 4, 8, 16]>, !fusion.tensor<f32[2, 4, 6, 16]>, !fusion.tensor<f32[2, 4, 6, 32]>, !fusion.tensor<ui64[2]>, !fusion.tensor<ui64[]> -> !fusion.tensor<f32[2, 4, 8, 32]>
  %at = fusion.sdpfa_fwd output %q, %k, %v, %rs, %ro dropout_p 0.000000e+00 is_causal true : !fusion.tensor<f32[2, 4, 8, 16]>, !fusion.tensor<f32[2, 4, 6, 16]>, !fusion.tensor<f32[2, 4, 6, 32]>, !fusion.tensor<ui64[2]>, !fusion.tensor<ui64[]> -> !fusion.tensor<f32[2, 4, 8, 32]>
  // CHECK-NEXT: %ls = fusion.sdpfa_fwd logsumexp %q, %k, %v, %rs, %ro dropout_p 1.000000e-01 is_causal false scale 2.500000e-01 : !fusion.tensor<f32[2, 4, 8, 16]>, !fusion.tensor<f32[2, 4, 6, 16]>, !fusion.tensor<f32[2, 4, 6, 32]>, !fusion.tensor<ui64[2]>, !fusion.tensor<ui64[]> -> !fusion.tensor<f32[2, 4, 8]>
  %ls = fusion.sdpfa_fwd logsumexp %q, %k, %v, %rs, %ro dropout_p 1.000000e-01 is_causal false scale 2.500000e-01 : !fusion.tensor<f32[2, 4, 8, 16]>, !fusion.tensor<f32[2, 4, 6, 16]>, !fusion.tensor<f32[2, 4, 6, 32]>, !fusion.tensor<ui64[2]>, !fusion.tensor<ui64[]> -> !fusion.tensor<f32[2, 4, 8]>
  // CHECK-NEXT: %dk = fusion.sdpfa_bwd key %g, %q, %k, %v, %at, %ls, %rs, %ro dropout_p 0.000000e+00 is_causal true : !fusion.tensor<f32[2, 4, 8, 32]>, !fusion.tensor<f32[2, 4, 8, 16]>, !fusion.tensor<f32[2, 4, 6, 16]>, !fusion.tensor<f32[2, 4, 6, 32]>, !fusion.tensor<f32[2, 4, 8, 32]>, !fusion.tensor<f32[2, 4, 8]>, !fusion.tensor<ui64[2]>, !fusion.tensor<ui64[]> -> !fusion.tensor<f32[2, 4, 6, 16]>
  %dk = fusion.sdpfa_bwd key %g, %q, %k, %v, %at, %ls, %rs, %ro dropout_p 0.000000e+00 is_causal true : !fusion.tensor<f32[2, 4, 8, 32]>, !fusion.tensor<f32[2, 4, 8, 16]>, !fusion.tensor<f32[2, 4, 6, 16]>, !fusion.tensor<f32[2, 4, 6, 32]>, !fusion.tensor<f32[2, 4, 8, 32]>, !fusion.tensor<f32[2, 4, 8]>, !fusion.tensor<ui64[2]>, !fusion.tensor<ui64[]> -> !fusion.tensor<f32[2, 4, 6, 16]>
  // CHECK-NEXT: fusion.return
  fusion.return
}
// A linear with a stack of weights, and a slice to the end of a dynamic axis.
// CHECK-LABEL: fusion.func @stacked(%x: !fusion.tensor<f32[8, 4]>, %w: !fusion.tensor<f32[2, 3, 4]>, %bias: !fusion.tensor<f32[2, 3]>, %d: !fusion.tensor<f32[?, 4]>) {
fusion.func @stacked(%x: !fusion.tensor<f32[8, 4]>, %w: !fusion.tensor<f32[2, 3, 4]>, %bias: !fusion.tensor<f32[2, 3]>, %d: !fusion.tensor<f32[?, 4]>) {
  // CHECK-NEXT: %lin = fusion.linear %x, %w bias %bias : !fusion.tensor<f32[8, 4]>, !fusion.tensor<f32[2, 3, 4]>, !fusion.tensor<f32[2, 3]> -> !fusion.tensor<f32[2, 8, 3, r4]>
  %lin = fusion.linear %x, %w bias %bias : !fusion.tensor<f32[8, 4]>, !fusion.tensor<f32[2, 3, 4]>, !fusion.tensor<f32[2, 3]> -> !fusion.tensor<f32[2, 8, 3, r4]>
  // CHECK-NEXT: %tail = fusion.slice %d starts [1, 0] stops [9223372036854775807, 4] steps [1, 1] : !fusion.tensor<f32[?, 4]> -> !fusion.tensor<f32[?, 4]>
  %tail = fusion.slice %d starts [1, 0] stops [9223372036854775807, 4] steps [1, 1] : !fusion.tensor<f32[?, 4]> -> !fusion.tensor<f32[?, 4]>
  // CHECK-NEXT: fusion.return
  fusion.return
}
