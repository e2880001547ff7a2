"""What a function does with its buffers, decided once when it is compiled: which values
share a buffer, which buffers some op writes, which ones a collective reads or writes,
which ones the function returns. The capture check and the evaluator's views ask.
"""

from __future__ import annotations

from xdsl.ir import Block, Operation, SSAValue

from hostir.passes.buffer_aliases import alias_source, written_operands
from hostir_dialect import hir
from hostir_dialect.functions import FunctionLikeOp
from hostir_dialect.tensor_type import TensorType


class BufferUses:
    """The buffers of `function`: each tensor value's root (the argument or the value that
    created its buffer) and the roots it writes, communicates and returns."""

    def __init__(self, function: FunctionLikeOp):
        block = function.body.block
        self.arguments = set(block.args)
        self.root: dict[SSAValue, SSAValue] = {arg: arg for arg in block.args}
        for op in function.walk():
            for result in op.results:
                if isinstance(result.type, TensorType):
                    source = alias_source(op, result)
                    self.root[result] = result if source is None else self.root[source]
        ops = list(function.walk())
        self.written = {self.root[v] for op in ops for v in written_operands(op)}
        self.communicated = {
            self.root[v] for op in ops if isinstance(op, (hir.CollectiveOp, hir.PointToPointOp))
            for v in op.operands if v in self.root
        }
        terminator = block.last_op
        self.returned = {self.root[v] for v in (terminator.operands if terminator else ()) if v in self.root}

    def argument_of(self, value: SSAValue) -> SSAValue | None:
        """The argument whose buffer `value` is (a view of), if any."""
        root = self.root.get(value)
        return root if root in self.arguments else None

    def unwritten(self, value: SSAValue) -> bool:
        """No op of the function writes `value`'s buffer."""
        root = self.root.get(value)
        return root is not None and root not in self.written

    def immutable(self, value: SSAValue) -> bool:
        """No op of the function writes `value`'s buffer, no collective touches it (they need
        dense buffers) and the function does not return it: a view of another immutable
        value can stand for it."""
        return self.unwritten(value) and self.root[value] not in self.communicated and self.root[value] not in self.returned

    def unwritten_while_read(self, op: Operation) -> bool:
        """From `op` to the last use of its results, does nothing write the buffers `op`
        reads, nor communicate or return its results? Then results that are views of its
        inputs stay valid as long as they are read. Its results must be read in `op`'s
        block only (a loop body: the next iteration's writes come after this one's reads)."""
        block = op.parent_block()
        assert block is not None
        position = {o: i for i, o in enumerate(block.ops)}
        last = position[op]
        for result in op.results:
            for use in result.uses:
                user = _ancestor_in(use.operation, block)
                if user is None or isinstance(user, (hir.CollectiveOp, hir.PointToPointOp, hir.ReturnOp)):
                    return False  # a returned buffer or a communicated one is laid out as its type says
                last = max(last, position[user])
        read = {self.root[v] for v in op.operands if v in self.root}
        between = [o for o in block.ops if position[op] < position[o] <= last]
        return not any(self.root.get(w) in read for o in between for inner in o.walk() for w in written_operands(inner))


def _ancestor_in(op: Operation, block: Block) -> Operation | None:
    """`op`, or the op of `block` that holds it (None if `block` holds neither)."""
    while op is not None and op.parent_block() is not block:
        op = op.parent_op()  # type: ignore[assignment]  # None ends the loop
    return op
