// RUN: HOSTIR_ROUNDTRIP
// RUN: HOSTIR_GENERIC_ROUNDTRIP

// Every fusion op in its custom syntax; fusion.func and fusion.return.

// CHECK-LABEL: fusion.func @unary(%a: !fusion.tensor<f32[4]>) -> !fusion.tensor<f32[4]> {
fusion.func @unary(%a: !fusion.tensor<f32[4]>) -> !fusion.tensor<f32[4]> {
  // CHECK-NEXT: %set = fusion.set %a : !fusion.tensor<f32[4]> -> !fusion.tensor<f32[4]>
  %set = fusion.set %a : !fusion.tensor<f32[4]> -> !fusion.tensor<f32[4]>
  // CHECK-NEXT: %neg = fusion.neg %set : !fusion.tensor<f32[4]> -> !fusion.tensor<f32[4]>
  %neg = fusion.neg %set : !fusion.tensor<f32[4]> -> !fusion.tensor<f32[4]>
  // CHECK-NEXT: %abs = fusion.abs %neg : !fusion.tensor<f32[4]> -> !fusion.tensor<f32[4]>
  %abs = fusion.abs %neg : !fusion.tensor<f32[4]> -> !fusion.tensor<f32[4]>
  // CHECK-NEXT: %relu = fusion.relu %abs : !fusion.tensor<f32[4]> -> !fusion.tensor<f32[4]>
  %relu = fusion.relu %abs : !fusion.tensor<f32[4]> -> !fusion.tensor<f32[4]>
  // CHECK-NEXT: %exp = fusion.exp %relu : !fusion.tensor<f32[4]> -> !fusion.tensor<f32[4]>
  %exp = fusion.exp %relu : !fusion.tensor<f32[4]> -> !fusion.tensor<f32[4]>
  // CHECK-NEXT: %log = fusion.log %exp : !fusion.tensor<f32[4]> -> !fusion.tensor<f32[4]>
  %log = fusion.log %exp : !fusion.tensor<f32[4]> -> !fusion.tensor<f32[4]>
  // CHECK-NEXT: %sqrt = fusion.sqrt %log : !fusion.tensor<f32[4]> -> !fusion.tensor<f32[4]>
  %sqrt = fusion.sqrt %log : !fusion.tensor<f32[4]> -> !fusion.tensor<f32[4]>
  // CHECK-NEXT: %rsqrt = fusion.rsqrt %sqrt : !fusion.tensor<f32[4]> -> !fusion.tensor<f32[4]>
  %rsqrt = fusion.rsqrt %sqrt : !fusion.tensor<f32[4]> -> !fusion.tensor<f32[4]>
  // CHECK-NEXT: %sin = fusion.sin %rsqrt : !fusion.tensor<f32[4]> -> !fusion.tensor<f32[4]>
  %sin = fusion.sin %rsqrt : !fusion.tensor<f32[4]> -> !fusion.tensor<f32[4]>
  // CHECK-NEXT: %cos = fusion.cos %sin : !fusion.tensor<f32[4]> -> !fusion.tensor<f32[4]>
  %cos = fusion.cos %sin : !fusion.tensor<f32[4]> -> !fusion.tensor<f32[4]>
  // CHECK-NEXT: %tanh = fusion.tanh %cos : !fusion.tensor<f32[4]> -> !fusion.tensor<f32[4]>
  %tanh = fusion.tanh %cos : !fusion.tensor<f32[4]> -> !fusion.tensor<f32[4]>
  // CHECK-NEXT: %sigmoid = fusion.sigmoid %tanh : !fusion.tensor<f32[4]> -> !fusion.tensor<f32[4]>
  %sigmoid = fusion.sigmoid %tanh : !fusion.tensor<f32[4]> -> !fusion.tensor<f32[4]>
  // CHECK-NEXT: %reciprocal = fusion.reciprocal %sigmoid : !fusion.tensor<f32[4]> -> !fusion.tensor<f32[4]>
  %reciprocal = fusion.reciprocal %sigmoid : !fusion.tensor<f32[4]> -> !fusion.tensor<f32[4]>
  // CHECK-NEXT: %silu = fusion.silu %reciprocal : !fusion.tensor<f32[4]> -> !fusion.tensor<f32[4]>
  %silu = fusion.silu %reciprocal : !fusion.tensor<f32[4]> -> !fusion.tensor<f32[4]>
  // CHECK-NEXT: %gelu = fusion.gelu tanh %silu : !fusion.tensor<f32[4]> -> !fusion.tensor<f32[4]>
  %gelu = fusion.gelu tanh %silu : !fusion.tensor<f32[4]> -> !fusion.tensor<f32[4]>
  // CHECK-NEXT: %erf_gelu = fusion.gelu none %gelu : !fusion.tensor<f32[4]> -> !fusion.tensor<f32[4]>
  %erf_gelu = fusion.gelu none %gelu : !fusion.tensor<f32[4]> -> !fusion.tensor<f32[4]>
  // CHECK-NEXT: fusion.return %erf_gelu : !fusion.tensor<f32[4]>
  fusion.return %erf_gelu : !fusion.tensor<f32[4]>
}

// CHECK-LABEL: fusion.func @binary(%a: !fusion.tensor<f32[4]>, %b: !fusion.tensor<f32[4]>) -> (!fusion.tensor<f32[4]>, !fusion.tensor<i1[4]>) {
fusion.func @binary(%a: !fusion.tensor<f32[4]>, %b: !fusion.tensor<f32[4]>) -> (!fusion.tensor<f32[4]>, !fusion.tensor<i1[4]>) {
  // CHECK-NEXT: %add = fusion.add %a, %b : !fusion.tensor<f32[4]>, !fusion.tensor<f32[4]> -> !fusion.tensor<f32[4]>
  %add = fusion.add %a, %b : !fusion.tensor<f32[4]>, !fusion.tensor<f32[4]> -> !fusion.tensor<f32[4]>
  // CHECK-NEXT: %sub = fusion.sub %a, %b : !fusion.tensor<f32[4]>, !fusion.tensor<f32[4]> -> !fusion.tensor<f32[4]>
  %sub = fusion.sub %a, %b : !fusion.tensor<f32[4]>, !fusion.tensor<f32[4]> -> !fusion.tensor<f32[4]>
  // CHECK-NEXT: %mul = fusion.mul %a, %b : !fusion.tensor<f32[4]>, !fusion.tensor<f32[4]> -> !fusion.tensor<f32[4]>
  %mul = fusion.mul %a, %b : !fusion.tensor<f32[4]>, !fusion.tensor<f32[4]> -> !fusion.tensor<f32[4]>
  // CHECK-NEXT: %div = fusion.div %a, %b : !fusion.tensor<f32[4]>, !fusion.tensor<f32[4]> -> !fusion.tensor<f32[4]>
  %div = fusion.div %a, %b : !fusion.tensor<f32[4]>, !fusion.tensor<f32[4]> -> !fusion.tensor<f32[4]>
  // CHECK-NEXT: %maximum = fusion.maximum %a, %b : !fusion.tensor<f32[4]>, !fusion.tensor<f32[4]> -> !fusion.tensor<f32[4]>
  %maximum = fusion.maximum %a, %b : !fusion.tensor<f32[4]>, !fusion.tensor<f32[4]> -> !fusion.tensor<f32[4]>
  // CHECK-NEXT: %minimum = fusion.minimum %a, %b : !fusion.tensor<f32[4]>, !fusion.tensor<f32[4]> -> !fusion.tensor<f32[4]>
  %minimum = fusion.minimum %a, %b : !fusion.tensor<f32[4]>, !fusion.tensor<f32[4]> -> !fusion.tensor<f32[4]>
  // CHECK-NEXT: %pow = fusion.pow %a, %b : !fusion.tensor<f32[4]>, !fusion.tensor<f32[4]> -> !fusion.tensor<f32[4]>
  %pow = fusion.pow %a, %b : !fusion.tensor<f32[4]>, !fusion.tensor<f32[4]> -> !fusion.tensor<f32[4]>
  // CHECK-NEXT: %eq = fusion.eq %a, %b : !fusion.tensor<f32[4]>, !fusion.tensor<f32[4]> -> !fusion.tensor<i1[4]>
  %eq = fusion.eq %a, %b : !fusion.tensor<f32[4]>, !fusion.tensor<f32[4]> -> !fusion.tensor<i1[4]>
  // CHECK-NEXT: %ne = fusion.ne %a, %b : !fusion.tensor<f32[4]>, !fusion.tensor<f32[4]> -> !fusion.tensor<i1[4]>
  %ne = fusion.ne %a, %b : !fusion.tensor<f32[4]>, !fusion.tensor<f32[4]> -> !fusion.tensor<i1[4]>
  // CHECK-NEXT: %lt = fusion.lt %a, %b : !fusion.tensor<f32[4]>, !fusion.tensor<f32[4]> -> !fusion.tensor<i1[4]>
  %lt = fusion.lt %a, %b : !fusion.tensor<f32[4]>, !fusion.tensor<f32[4]> -> !fusion.tensor<i1[4]>
  // CHECK-NEXT: %le = fusion.le %a, %b : !fusion.tensor<f32[4]>, !fusion.tensor<f32[4]> -> !fusion.tensor<i1[4]>
  %le = fusion.le %a, %b : !fusion.tensor<f32[4]>, !fusion.tensor<f32[4]> -> !fusion.tensor<i1[4]>
  // CHECK-NEXT: %gt = fusion.gt %a, %b : !fusion.tensor<f32[4]>, !fusion.tensor<f32[4]> -> !fusion.tensor<i1[4]>
  %gt = fusion.gt %a, %b : !fusion.tensor<f32[4]>, !fusion.tensor<f32[4]> -> !fusion.tensor<i1[4]>
  // CHECK-NEXT: %ge = fusion.ge %a, %b : !fusion.tensor<f32[4]>, !fusion.tensor<f32[4]> -> !fusion.tensor<i1[4]>
  %ge = fusion.ge %a, %b : !fusion.tensor<f32[4]>, !fusion.tensor<f32[4]> -> !fusion.tensor<i1[4]>
  // CHECK-NEXT: fusion.return %pow, %ge : !fusion.tensor<f32[4]>, !fusion.tensor<i1[4]>
  fusion.return %pow, %ge : !fusion.tensor<f32[4]>, !fusion.tensor<i1[4]>
}

// Scalar operands, broadcast axes, dynamic extents, a cast.
// CHECK-LABEL: fusion.func @operands(%a: !fusion.tensor<f32[8, 4]>, %row: !fusion.tensor<f32[b1, 4]>, %d: !fusion.tensor<f32[?, 4]>) -> !fusion.tensor<bf16[8, 4]> {
fusion.func @operands(%a: !fusion.tensor<f32[8, 4]>, %row: !fusion.tensor<f32[b1, 4]>, %d: !fusion.tensor<f32[?, 4]>) -> !fusion.tensor<bf16[8, 4]> {
  // CHECK-NEXT: %s = arith.constant 2.000000e+00 : f32
  %s = arith.constant 2.0 : f32
  // CHECK-NEXT: %scaled = fusion.mul %a, %s : !fusion.tensor<f32[8, 4]>, f32 -> !fusion.tensor<f32[8, 4]>
  %scaled = fusion.mul %a, %s : !fusion.tensor<f32[8, 4]>, f32 -> !fusion.tensor<f32[8, 4]>
  // CHECK-NEXT: %rdiv = fusion.div %s, %a : f32, !fusion.tensor<f32[8, 4]> -> !fusion.tensor<f32[8, 4]>
  %rdiv = fusion.div %s, %a : f32, !fusion.tensor<f32[8, 4]> -> !fusion.tensor<f32[8, 4]>
  // CHECK-NEXT: %positive = fusion.gt %a, %s : !fusion.tensor<f32[8, 4]>, f32 -> !fusion.tensor<i1[8, 4]>
  %positive = fusion.gt %a, %s : !fusion.tensor<f32[8, 4]>, f32 -> !fusion.tensor<i1[8, 4]>
  // CHECK-NEXT: %plus_row = fusion.add %a, %row : !fusion.tensor<f32[8, 4]>, !fusion.tensor<f32[b1, 4]> -> !fusion.tensor<f32[8, 4]>
  %plus_row = fusion.add %a, %row : !fusion.tensor<f32[8, 4]>, !fusion.tensor<f32[b1, 4]> -> !fusion.tensor<f32[8, 4]>
  // CHECK-NEXT: %row2 = fusion.add %row, %row : !fusion.tensor<f32[b1, 4]>, !fusion.tensor<f32[b1, 4]> -> !fusion.tensor<f32[b1, 4]>
  %row2 = fusion.add %row, %row : !fusion.tensor<f32[b1, 4]>, !fusion.tensor<f32[b1, 4]> -> !fusion.tensor<f32[b1, 4]>
  // CHECK-NEXT: %dyn = fusion.sub %d, %row : !fusion.tensor<f32[?, 4]>, !fusion.tensor<f32[b1, 4]> -> !fusion.tensor<f32[?, 4]>
  %dyn = fusion.sub %d, %row : !fusion.tensor<f32[?, 4]>, !fusion.tensor<f32[b1, 4]> -> !fusion.tensor<f32[?, 4]>
  // CHECK-NEXT: %i = arith.constant 3 : i64
  %i = arith.constant 3 : i64
  // CHECK-NEXT: %ai = fusion.cast %a : !fusion.tensor<f32[8, 4]> -> !fusion.tensor<i64[8, 4]>
  %ai = fusion.cast %a : !fusion.tensor<f32[8, 4]> -> !fusion.tensor<i64[8, 4]>
  // CHECK-NEXT: %shifted = fusion.add %ai, %i : !fusion.tensor<i64[8, 4]>, i64 -> !fusion.tensor<i64[8, 4]>
  %shifted = fusion.add %ai, %i : !fusion.tensor<i64[8, 4]>, i64 -> !fusion.tensor<i64[8, 4]>
  // CHECK-NEXT: %cast = fusion.cast %scaled : !fusion.tensor<f32[8, 4]> -> !fusion.tensor<bf16[8, 4]>
  %cast = fusion.cast %scaled : !fusion.tensor<f32[8, 4]> -> !fusion.tensor<bf16[8, 4]>
  // CHECK-NEXT: fusion.return %cast : !fusion.tensor<bf16[8, 4]>
  fusion.return %cast : !fusion.tensor<bf16[8, 4]>
}

// CHECK-LABEL: fusion.func @layout(%a: !fusion.tensor<f32[8, 4]>) -> !fusion.tensor<f32[4, 8]> {
fusion.func @layout(%a: !fusion.tensor<f32[8, 4]>) -> !fusion.tensor<f32[4, 8]> {
  // CHECK-NEXT: %permute = fusion.permute %a dims [1, 0] : !fusion.tensor<f32[8, 4]> -> !fusion.tensor<f32[4, 8]>
  %permute = fusion.permute %a dims [1, 0] : !fusion.tensor<f32[8, 4]> -> !fusion.tensor<f32[4, 8]>
  // CHECK-NEXT: %permute_neg = fusion.permute %a dims [-1, 0] : !fusion.tensor<f32[8, 4]> -> !fusion.tensor<f32[4, 8]>
  %permute_neg = fusion.permute %a dims [-1, 0] : !fusion.tensor<f32[8, 4]> -> !fusion.tensor<f32[4, 8]>
  // CHECK-NEXT: %flat = fusion.reshape %a : !fusion.tensor<f32[8, 4]> -> !fusion.tensor<f32[32]>
  %flat = fusion.reshape %a : !fusion.tensor<f32[8, 4]> -> !fusion.tensor<f32[32]>
  // CHECK-NEXT: %split = fusion.reshape %flat : !fusion.tensor<f32[32]> -> !fusion.tensor<f32[2, 4, 4]>
  %split = fusion.reshape %flat : !fusion.tensor<f32[32]> -> !fusion.tensor<f32[2, 4, 4]>
  // CHECK-NEXT: %bcast = fusion.broadcast %a dims [0, 2] : !fusion.tensor<f32[8, 4]> -> !fusion.tensor<f32[b1, 8, b1, 4]>
  %bcast = fusion.broadcast %a dims [0, 2] : !fusion.tensor<f32[8, 4]> -> !fusion.tensor<f32[b1, 8, b1, 4]>
  // CHECK-NEXT: %bcast_last = fusion.broadcast %a dims [-1] : !fusion.tensor<f32[8, 4]> -> !fusion.tensor<f32[8, 4, b1]>
  %bcast_last = fusion.broadcast %a dims [-1] : !fusion.tensor<f32[8, 4]> -> !fusion.tensor<f32[8, 4, b1]>
  // CHECK-NEXT: %squeeze = fusion.squeeze %bcast dims [0, 2] : !fusion.tensor<f32[b1, 8, b1, 4]> -> !fusion.tensor<f32[8, 4]>
  %squeeze = fusion.squeeze %bcast dims [0, 2] : !fusion.tensor<f32[b1, 8, b1, 4]> -> !fusion.tensor<f32[8, 4]>
  // CHECK-NEXT: fusion.return %permute : !fusion.tensor<f32[4, 8]>
  fusion.return %permute : !fusion.tensor<f32[4, 8]>
}

// Reductions keep the reduced axes as reduction axes; consumers do not see them.
// CHECK-LABEL: fusion.func @reductions(%a: !fusion.tensor<f32[4, 8, 2]>) -> !fusion.tensor<f32[4, r8, r2]> {
fusion.func @reductions(%a: !fusion.tensor<f32[4, 8, 2]>) -> !fusion.tensor<f32[4, r8, r2]> {
  // CHECK-NEXT: %sum = fusion.reduce sum %a dims [2] : !fusion.tensor<f32[4, 8, 2]> -> !fusion.tensor<f32[4, 8, r2]>
  %sum = fusion.reduce sum %a dims [2] : !fusion.tensor<f32[4, 8, 2]> -> !fusion.tensor<f32[4, 8, r2]>
  // CHECK-NEXT: %prod = fusion.reduce prod %a dims [0] : !fusion.tensor<f32[4, 8, 2]> -> !fusion.tensor<f32[r4, 8, 2]>
  %prod = fusion.reduce prod %a dims [0] : !fusion.tensor<f32[4, 8, 2]> -> !fusion.tensor<f32[r4, 8, 2]>
  // CHECK-NEXT: %max = fusion.reduce max %a dims [-1] : !fusion.tensor<f32[4, 8, 2]> -> !fusion.tensor<f32[4, 8, r2]>
  %max = fusion.reduce max %a dims [-1] : !fusion.tensor<f32[4, 8, 2]> -> !fusion.tensor<f32[4, 8, r2]>
  // CHECK-NEXT: %min = fusion.reduce min %a dims [1, 2] : !fusion.tensor<f32[4, 8, 2]> -> !fusion.tensor<f32[4, r8, r2]>
  %min = fusion.reduce min %a dims [1, 2] : !fusion.tensor<f32[4, 8, 2]> -> !fusion.tensor<f32[4, r8, r2]>
  // The consumer of %sum sees [4, 8]: reducing its axis 1 gives [4, r8] (plus the old r2).
  // CHECK-NEXT: %twice = fusion.reduce sum %sum dims [1] : !fusion.tensor<f32[4, 8, r2]> -> !fusion.tensor<f32[4, r8]>
  %twice = fusion.reduce sum %sum dims [1] : !fusion.tensor<f32[4, 8, r2]> -> !fusion.tensor<f32[4, r8]>
  // CHECK-NEXT: %neg = fusion.neg %sum : !fusion.tensor<f32[4, 8, r2]> -> !fusion.tensor<f32[4, 8]>
  %neg = fusion.neg %sum : !fusion.tensor<f32[4, 8, r2]> -> !fusion.tensor<f32[4, 8]>
  // CHECK-NEXT: fusion.return %min : !fusion.tensor<f32[4, r8, r2]>
  fusion.return %min : !fusion.tensor<f32[4, r8, r2]>
}

// CHECK-LABEL: fusion.func @matmuls(
fusion.func @matmuls(%a: !fusion.tensor<f32[8, 4]>, %b: !fusion.tensor<f32[4, 2]>, %ba: !fusion.tensor<f32[16, 8, 4]>, %bb: !fusion.tensor<f32[16, 4, 2]>, %b1: !fusion.tensor<f32[b1, 4, 2]>, %bbb: !fusion.tensor<f32[2, 16, 4, 2]>, %k: !fusion.tensor<f32[4]>, %w: !fusion.tensor<f32[3, 4]>, %bias: !fusion.tensor<f32[3]>) -> !fusion.tensor<f32[8, 2, r4]> {
  // CHECK-NEXT: %mm = fusion.matmul %a, %b : !fusion.tensor<f32[8, 4]>, !fusion.tensor<f32[4, 2]> -> !fusion.tensor<f32[8, 2, r4]>
  %mm = fusion.matmul %a, %b : !fusion.tensor<f32[8, 4]>, !fusion.tensor<f32[4, 2]> -> !fusion.tensor<f32[8, 2, r4]>
  // A batched A times a plain [K, N] matrix.
  // CHECK-NEXT: %batch_a = fusion.matmul %ba, %b : !fusion.tensor<f32[16, 8, 4]>, !fusion.tensor<f32[4, 2]> -> !fusion.tensor<f32[16, 8, 2, r4]>
  %batch_a = fusion.matmul %ba, %b : !fusion.tensor<f32[16, 8, 4]>, !fusion.tensor<f32[4, 2]> -> !fusion.tensor<f32[16, 8, 2, r4]>
  // CHECK-NEXT: %batched = fusion.matmul %ba, %bb : !fusion.tensor<f32[16, 8, 4]>, !fusion.tensor<f32[16, 4, 2]> -> !fusion.tensor<f32[16, 8, 2, r4]>
  %batched = fusion.matmul %ba, %bb : !fusion.tensor<f32[16, 8, 4]>, !fusion.tensor<f32[16, 4, 2]> -> !fusion.tensor<f32[16, 8, 2, r4]>
  // A broadcast batch axis takes the other operand's extent.
  // CHECK-NEXT: %bcast_batch = fusion.matmul %ba, %b1 : !fusion.tensor<f32[16, 8, 4]>, !fusion.tensor<f32[b1, 4, 2]> -> !fusion.tensor<f32[16, 8, 2, r4]>
  %bcast_batch = fusion.matmul %ba, %b1 : !fusion.tensor<f32[16, 8, 4]>, !fusion.tensor<f32[b1, 4, 2]> -> !fusion.tensor<f32[16, 8, 2, r4]>
  // Batch axes align from the right: [16] against [2, 16] (nvFuser's matmul_AR shape).
  // CHECK-NEXT: %rank_bcast = fusion.matmul %ba, %bbb : !fusion.tensor<f32[16, 8, 4]>, !fusion.tensor<f32[2, 16, 4, 2]> -> !fusion.tensor<f32[2, 16, 8, 2, r4]>
  %rank_bcast = fusion.matmul %ba, %bbb : !fusion.tensor<f32[16, 8, 4]>, !fusion.tensor<f32[2, 16, 4, 2]> -> !fusion.tensor<f32[2, 16, 8, 2, r4]>
  // 1-D operands as in torch.matmul: no M (or no N) axis.
  // CHECK-NEXT: %vec_mat = fusion.matmul %k, %b : !fusion.tensor<f32[4]>, !fusion.tensor<f32[4, 2]> -> !fusion.tensor<f32[2, r4]>
  %vec_mat = fusion.matmul %k, %b : !fusion.tensor<f32[4]>, !fusion.tensor<f32[4, 2]> -> !fusion.tensor<f32[2, r4]>
  // CHECK-NEXT: %mat_vec = fusion.matmul %a, %k : !fusion.tensor<f32[8, 4]>, !fusion.tensor<f32[4]> -> !fusion.tensor<f32[8, r4]>
  %mat_vec = fusion.matmul %a, %k : !fusion.tensor<f32[8, 4]>, !fusion.tensor<f32[4]> -> !fusion.tensor<f32[8, r4]>
  // CHECK-NEXT: %lin = fusion.linear %a, %w : !fusion.tensor<f32[8, 4]>, !fusion.tensor<f32[3, 4]> -> !fusion.tensor<f32[8, 3, r4]>
  %lin = fusion.linear %a, %w : !fusion.tensor<f32[8, 4]>, !fusion.tensor<f32[3, 4]> -> !fusion.tensor<f32[8, 3, r4]>
  // CHECK-NEXT: %lin_bias = fusion.linear %a, %w bias %bias : !fusion.tensor<f32[8, 4]>, !fusion.tensor<f32[3, 4]>, !fusion.tensor<f32[3]> -> !fusion.tensor<f32[8, 3, r4]>
  %lin_bias = fusion.linear %a, %w bias %bias : !fusion.tensor<f32[8, 4]>, !fusion.tensor<f32[3, 4]>, !fusion.tensor<f32[3]> -> !fusion.tensor<f32[8, 3, r4]>
  // CHECK-NEXT: %lin_batched = fusion.linear %ba, %w : !fusion.tensor<f32[16, 8, 4]>, !fusion.tensor<f32[3, 4]> -> !fusion.tensor<f32[16, 8, 3, r4]>
  %lin_batched = fusion.linear %ba, %w : !fusion.tensor<f32[16, 8, 4]>, !fusion.tensor<f32[3, 4]> -> !fusion.tensor<f32[16, 8, 3, r4]>
  // The contracted axis of a matmul result is not part of its value.
  // CHECK-NEXT: %mm_t = fusion.permute %mm dims [1, 0] : !fusion.tensor<f32[8, 2, r4]> -> !fusion.tensor<f32[2, 8]>
  %mm_t = fusion.permute %mm dims [1, 0] : !fusion.tensor<f32[8, 2, r4]> -> !fusion.tensor<f32[2, 8]>
  // CHECK-NEXT: %chain = fusion.matmul %mm, %mm_t : !fusion.tensor<f32[8, 2, r4]>, !fusion.tensor<f32[2, 8]> -> !fusion.tensor<f32[8, 8, r2]>
  %chain = fusion.matmul %mm, %mm_t : !fusion.tensor<f32[8, 2, r4]>, !fusion.tensor<f32[2, 8]> -> !fusion.tensor<f32[8, 8, r2]>
  // CHECK-NEXT: fusion.return %mm : !fusion.tensor<f32[8, 2, r4]>
  fusion.return %mm : !fusion.tensor<f32[8, 2, r4]>
}

// CHECK-LABEL: fusion.func @indexing(%a: !fusion.tensor<f32[8, 4]>) -> !fusion.tensor<f32[4]> {
fusion.func @indexing(%a: !fusion.tensor<f32[8, 4]>) -> !fusion.tensor<f32[4]> {
  // CHECK-NEXT: %slice = fusion.slice %a starts [0, 1] stops [8, 4] steps [2, 1] : !fusion.tensor<f32[8, 4]> -> !fusion.tensor<f32[4, 3]>
  %slice = fusion.slice %a starts [0, 1] stops [8, 4] steps [2, 1] : !fusion.tensor<f32[8, 4]> -> !fusion.tensor<f32[4, 3]>
  // CHECK-NEXT: %odd = fusion.slice %a starts [1, 0] stops [8, 4] steps [3, 1] : !fusion.tensor<f32[8, 4]> -> !fusion.tensor<f32[3, 4]>
  %odd = fusion.slice %a starts [1, 0] stops [8, 4] steps [3, 1] : !fusion.tensor<f32[8, 4]> -> !fusion.tensor<f32[3, 4]>
  // CHECK-NEXT: %empty = fusion.slice %a starts [2, 0] stops [2, 4] steps [1, 1] : !fusion.tensor<f32[8, 4]> -> !fusion.tensor<f32[0, 4]>
  %empty = fusion.slice %a starts [2, 0] stops [2, 4] steps [1, 1] : !fusion.tensor<f32[8, 4]> -> !fusion.tensor<f32[0, 4]>
  // CHECK-NEXT: %k = arith.constant 2 : index
  %k = arith.constant 2 : index
  // CHECK-NEXT: %row = fusion.select %a[%k] dim 0 : !fusion.tensor<f32[8, 4]>, index -> !fusion.tensor<f32[4]>
  %row = fusion.select %a[%k] dim 0 : !fusion.tensor<f32[8, 4]>, index -> !fusion.tensor<f32[4]>
  // CHECK-NEXT: %j = arith.constant 1 : i64
  %j = arith.constant 1 : i64
  // CHECK-NEXT: %col = fusion.select %a[%j] dim -1 : !fusion.tensor<f32[8, 4]>, i64 -> !fusion.tensor<f32[8]>
  %col = fusion.select %a[%j] dim -1 : !fusion.tensor<f32[8, 4]>, i64 -> !fusion.tensor<f32[8]>
  // CHECK-NEXT: fusion.return %row : !fusion.tensor<f32[4]>
  fusion.return %row : !fusion.tensor<f32[4]>
}

// Sharding annotations pass through ops untouched; shape rules look at logical axes only.
// CHECK-LABEL: fusion.func @annotated(%a: !fusion.tensor<f32[4, 2 didx], mesh=[0, 1]>) -> !fusion.tensor<f32[4 stream, 2], mesh=[0, 1]> {
fusion.func @annotated(%a: !fusion.tensor<f32[4, 2 didx], mesh=[0, 1]>) -> !fusion.tensor<f32[4 stream, 2], mesh=[0, 1]> {
  // CHECK-NEXT: %b = fusion.set %a : !fusion.tensor<f32[4, 2 didx], mesh=[0, 1]> -> !fusion.tensor<f32[4 stream, 2], mesh=[0, 1]>
  %b = fusion.set %a : !fusion.tensor<f32[4, 2 didx], mesh=[0, 1]> -> !fusion.tensor<f32[4 stream, 2], mesh=[0, 1]>
  // CHECK-NEXT: fusion.return %b : !fusion.tensor<f32[4 stream, 2], mesh=[0, 1]>
  fusion.return %b : !fusion.tensor<f32[4 stream, 2], mesh=[0, 1]>
}

// A function without results; fusion.return with no operands.
// CHECK-LABEL: fusion.func @nothing(%a: !fusion.tensor<f32[4]>) {
fusion.func @nothing(%a: !fusion.tensor<f32[4]>) {
  // CHECK-NEXT: fusion.return
  fusion.return
}

// Destination-passing form: every op kind may write `into` a buffer (in a host program).
// CHECK-LABEL: hir.program @destinations(
hir.program @destinations(%a: !fusion.tensor<f32[8, 4]>, %b: !fusion.tensor<f32[4, 2]>, %w: !fusion.tensor<f32[3, 4]>, %bias: !fusion.tensor<f32[3]>) {
  // CHECK: %set = fusion.set %a into %o84 : !fusion.tensor<f32[8, 4]> -> !fusion.tensor<f32[8, 4]>
  %o84 = hir.allocate : !fusion.tensor<f32[8, 4]>
  %set = fusion.set %a into %o84 : !fusion.tensor<f32[8, 4]> -> !fusion.tensor<f32[8, 4]>
  // CHECK-NEXT: %exp = fusion.exp %a into %o84 : !fusion.tensor<f32[8, 4]> -> !fusion.tensor<f32[8, 4]>
  %exp = fusion.exp %a into %o84 : !fusion.tensor<f32[8, 4]> -> !fusion.tensor<f32[8, 4]>
  // CHECK: %cast = fusion.cast %a into %obf : !fusion.tensor<f32[8, 4]> -> !fusion.tensor<bf16[8, 4]>
  %obf = hir.allocate : !fusion.tensor<bf16[8, 4]>
  %cast = fusion.cast %a into %obf : !fusion.tensor<f32[8, 4]> -> !fusion.tensor<bf16[8, 4]>
  // CHECK-NEXT: %add = fusion.add %a, %a into %o84 : !fusion.tensor<f32[8, 4]>, !fusion.tensor<f32[8, 4]> -> !fusion.tensor<f32[8, 4]>
  %add = fusion.add %a, %a into %o84 : !fusion.tensor<f32[8, 4]>, !fusion.tensor<f32[8, 4]> -> !fusion.tensor<f32[8, 4]>
  // CHECK: %permute = fusion.permute %a dims [1, 0] into %o48 : !fusion.tensor<f32[8, 4]> -> !fusion.tensor<f32[4, 8]>
  %o48 = hir.allocate : !fusion.tensor<f32[4, 8]>
  %permute = fusion.permute %a dims [1, 0] into %o48 : !fusion.tensor<f32[8, 4]> -> !fusion.tensor<f32[4, 8]>
  // CHECK-NEXT: %reshape = fusion.reshape %a into %o48 : !fusion.tensor<f32[8, 4]> -> !fusion.tensor<f32[4, 8]>
  %reshape = fusion.reshape %a into %o48 : !fusion.tensor<f32[8, 4]> -> !fusion.tensor<f32[4, 8]>
  // CHECK: %bcast = fusion.broadcast %a dims [0] into %ob : !fusion.tensor<f32[8, 4]> -> !fusion.tensor<f32[b1, 8, 4]>
  %ob = hir.allocate : !fusion.tensor<f32[b1, 8, 4]>
  %bcast = fusion.broadcast %a dims [0] into %ob : !fusion.tensor<f32[8, 4]> -> !fusion.tensor<f32[b1, 8, 4]>
  // CHECK-NEXT: %squeeze = fusion.squeeze %bcast dims [0] into %o84 : !fusion.tensor<f32[b1, 8, 4]> -> !fusion.tensor<f32[8, 4]>
  %squeeze = fusion.squeeze %bcast dims [0] into %o84 : !fusion.tensor<f32[b1, 8, 4]> -> !fusion.tensor<f32[8, 4]>
  // CHECK: %sum = fusion.reduce sum %a dims [1] into %or : !fusion.tensor<f32[8, 4]> -> !fusion.tensor<f32[8, r4]>
  %or = hir.allocate : !fusion.tensor<f32[8, r4]>
  %sum = fusion.reduce sum %a dims [1] into %or : !fusion.tensor<f32[8, 4]> -> !fusion.tensor<f32[8, r4]>
  // CHECK: %mm = fusion.matmul %a, %b into %omm : !fusion.tensor<f32[8, 4]>, !fusion.tensor<f32[4, 2]> -> !fusion.tensor<f32[8, 2, r4]>
  %omm = hir.allocate : !fusion.tensor<f32[8, 2, r4]>
  %mm = fusion.matmul %a, %b into %omm : !fusion.tensor<f32[8, 4]>, !fusion.tensor<f32[4, 2]> -> !fusion.tensor<f32[8, 2, r4]>
  // CHECK: %lin = fusion.linear %a, %w into %olin : !fusion.tensor<f32[8, 4]>, !fusion.tensor<f32[3, 4]> -> !fusion.tensor<f32[8, 3, r4]>
  %olin = hir.allocate : !fusion.tensor<f32[8, 3, r4]>
  %lin = fusion.linear %a, %w into %olin : !fusion.tensor<f32[8, 4]>, !fusion.tensor<f32[3, 4]> -> !fusion.tensor<f32[8, 3, r4]>
  // CHECK-NEXT: %lin_bias = fusion.linear %a, %w bias %bias into %olin : !fusion.tensor<f32[8, 4]>, !fusion.tensor<f32[3, 4]>, !fusion.tensor<f32[3]> -> !fusion.tensor<f32[8, 3, r4]>
  %lin_bias = fusion.linear %a, %w bias %bias into %olin : !fusion.tensor<f32[8, 4]>, !fusion.tensor<f32[3, 4]>, !fusion.tensor<f32[3]> -> !fusion.tensor<f32[8, 3, r4]>
  // CHECK: %slice = fusion.slice %a starts [0, 0] stops [8, 4] steps [2, 1] into %osl : !fusion.tensor<f32[8, 4]> -> !fusion.tensor<f32[4, 4]>
  %osl = hir.allocate : !fusion.tensor<f32[4, 4]>
  %slice = fusion.slice %a starts [0, 0] stops [8, 4] steps [2, 1] into %osl : !fusion.tensor<f32[8, 4]> -> !fusion.tensor<f32[4, 4]>
  // CHECK: %select = fusion.select %a[%i] dim 0 into %osel : !fusion.tensor<f32[8, 4]>, index -> !fusion.tensor<f32[4]>
  %i = arith.constant 0 : index
  %osel = hir.allocate : !fusion.tensor<f32[4]>
  %select = fusion.select %a[%i] dim 0 into %osel : !fusion.tensor<f32[8, 4]>, index -> !fusion.tensor<f32[4]>
  // CHECK-NEXT: hir.return
  hir.return
}
