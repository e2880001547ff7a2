"""`fuse-epilogues`: fold the activation that follows a matmul or linear into it, as GEMM
libraries' epilogues compute it (cuBLASLt's GELU and RELU epilogues, which also add a
linear's bias), so that the result is written once instead of written, read and written
again by a separate kernel:

    %c = fusion.matmul %a, %b : A, B -> C                    %c = fusion.matmul %a, %b epilogue gelu_tanh : A, B -> C
    %g = fusion.gelu tanh %c : C -> G                  ->    (uses of %g read %c)

for `fusion.gelu tanh` (cuBLASLt has no exact gelu) and `fusion.relu`, where the product
has no other use and the activation changes nothing but the values: same mesh, axes,
parallelization and layout as the product's value (`TensorType.value_type`), so it needs
no communication. Stream pipelines and the split by team member slice the fused op as
they sliced the matmul (its chunks carry the epilogue). The runtime computes it with
`torch._addmm_activation` on GPUs where the operands are matrices, and as the product
then the activation elsewhere (runtime/torch_ops.py).

Run in `hostir-lower` before `lower-to-host`: the product stays a host op (the matmul is
not moved into a kernel unit), so everything that splits, pipelines or overlaps matmuls
keeps working on it.
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp
from xdsl.ir import Operation
from xdsl.passes import ModulePass
from xdsl.pattern_rewriter import PatternRewriter, PatternRewriteWalker, RewritePattern, op_type_rewrite_pattern

from hostir_dialect import fusion
from hostir_dialect.symbols import fusions_to_lower
from hostir_dialect.tensor_type import tensor_type


def activation_epilogue(op: Operation) -> fusion.Epilogue | None:
    """The epilogue that computes `op`, if a GEMM library has one."""
    if isinstance(op, fusion.GeluOp) and op.approximate.data == fusion.GeluApproximation.TANH:
        return fusion.Epilogue.GELU_TANH
    if isinstance(op, fusion.ReluOp):
        return fusion.Epilogue.RELU
    return None


class FoldActivation(RewritePattern):
    """An activation of a product it alone reads becomes the product's epilogue."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: fusion.UnaryComputeOp, rewriter: PatternRewriter) -> None:
        epilogue = activation_epilogue(op)
        product = op.input.owner
        if epilogue is None or op.out is not None or not isinstance(product, (fusion.MatmulOp, fusion.LinearOp)):
            return
        if product.out is not None or fusion.epilogue_of(product) is not None or not product.result.has_one_use():
            return
        if tensor_type(product.result).value_type() != tensor_type(op.result).with_(stream_allocated=False):
            return  # the activation reshards (or retypes) the product: it stays an op of its own
        product.properties["epilogue"] = fusion.EpilogueAttr(epilogue)
        rewriter.replace(op, [], [product.result])


@dataclass(frozen=True)
class FuseEpilogues(ModulePass):
    """Fold the gelu (tanh) or relu that follows a matmul or linear into its epilogue."""

    name = "fuse-epilogues"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        for function in fusions_to_lower(op):
            PatternRewriteWalker(FoldActivation(), apply_recursively=False).rewrite_region(function.body)
            function.update_function_type()
