"""`allreduce-in-place`: an NCCL all-reduce reduces in the buffer its partial sums were
computed into. torch's `all_reduce` works in place, so an all-reduce from one buffer into
another copies its input into its output first (128 MiB: some 56 µs on an H200, 5% of a
matmul + all-reduce of that size at four GPUs). Where the partial sums are a compute op's
own result that only the all-reduce reads, the op writes them straight into the output,
seen as the partial's type:

    %p = fusion.matmul %a, %b : A, B -> P                 %c = hir.allocate : R
    %c = hir.allocate : R                           ->    %v = hir.alias_as %c : R -> P
    %w = hir.allreduce %p -> %c team [...] op sum         %p = fusion.matmul %a, %b into %v : A, B -> P
                                                          %w = hir.allreduce %p -> %c team [...] op sum

and the runtime reduces in place (input and output one buffer). The output must be an
allocation of static shape in the same block that nothing uses before the all-reduce,
laid out as the partial (`hir.alias_as`'s conditions); copy-engine all-reduces keep their
own buffers (`via`, symmetric memory).
Run after convert-op-to-communication (which picks the transports) and before
insert-deallocations (the partial then shares the output's buffer and is not freed).
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp
from xdsl.ir import Operation, SSAValue
from xdsl.passes import ModulePass
from xdsl.pattern_rewriter import PatternRewriter, PatternRewriteWalker, RewritePattern, op_type_rewrite_pattern
from xdsl.rewriter import InsertPoint

from hostir_dialect import fusion, hir
from hostir_dialect.symbols import programs
from hostir_dialect.tensor_type import tensor_type


class ReduceInTheOutput(RewritePattern):
    """An NCCL all-reduce of a compute op's own result, which only it reads, into a fresh
    allocation: the op computes into that allocation."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: hir.AllreduceOp, rewriter: PatternRewriter) -> None:
        producer, allocation = op.input.owner, op.output.owner
        if op.transport.data != hir.Transport.NCCL or not op.input.has_one_use():
            return
        if not isinstance(producer, fusion.ComputeOp) or producer.out is not None:
            return
        if not isinstance(allocation, hir.AllocateOp) or allocation.is_symmetric or allocation.operands:
            return
        if allocation.parent_block() is not producer.parent_block() or _used_before(op.output, op):
            return  # (an op writing the output before the all-reduce would overwrite the partial sums)
        if hir.alias_as_problem(tensor_type(op.output), tensor_type(op.input)) is not None:
            return
        allocation.detach()
        rewriter.insert(allocation, InsertPoint.before(producer))
        view = hir.AliasAsOp(op.output, tensor_type(op.input))
        rewriter.insert(view, InsertPoint.before(producer))
        rewriter.replace(producer, producer.retyped({}, tensor_type(producer.result), out=view.result))


def _used_before(value: SSAValue, op: Operation) -> bool:
    """Does an op before `op` in its block (or nested in one) use `value`?"""
    block = op.parent_block()
    assert block is not None  # a collective of a host program
    for use in value.uses:
        user = block.find_ancestor_op_in_block(use.operation)
        if user is not None and user is not op and user.is_before_in_block(op):
            return True
    return False


@dataclass(frozen=True)
class AllreduceInPlace(ModulePass):
    """NCCL all-reduces reduce in the buffer their partial sums are computed into."""

    name = "allreduce-in-place"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        for program in programs(op):
            PatternRewriteWalker(ReduceInTheOutput(), apply_recursively=False).rewrite_region(program.body)
