"""propagate-shardings: give every tensor a mesh and a DIDx/DIDy/Stream sharding
derived from the tensors the user annotated (nvFuser's PropagateShardingsPass, csrc/preseg_passes/propagate_shardings.cpp).

Forward over the ops in order, each result that the user did not annotate takes the
parallel types it lacks from its reference inputs (the weight of a matmul or linear
first, otherwise the most parallel input), mapped through the op's axis map with the
outer split replayed. Backward over the ops in reverse, each input that the user did
not annotate takes what it lacks from the op's result. The two sweeps repeat until
nothing changes (beyond nvFuser's one sweep each way, which leaves a tensor without a
mesh when its mesh arrives through a later backward step: `b = f(a); c = g(a, m)`).
Propagation only adds, so it ends. Tensors still without a mesh then (a chain connected
to no tensor with one) are replicated on the fusion's mesh if it uses exactly one.

A parallel type is propagated only where the mapping is exact: not from an inner
split, nor onto an axis its split factor does not divide (a slice or reshape onto
another extent). There the target is left unsharded on that type -- always a legal
choice, decompose-reshardings moves data where needed -- instead of refusing.

Annotated tensors (a mesh or any parallel piece, as written) are never changed.
Fusion inputs only ever receive a mesh: a Stream axis on an input is not allowed by
stream-parallel-type, and a new device sharding would change what the caller has to
pass in -- the sharding of an input is the user's contract with the caller. (nvFuser
lets inputs receive Stream; here an unannotated input stays replicated and whole.)
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp
from xdsl.ir import SSAValue
from xdsl.passes import ModulePass

from hostir_dialect.fusion import ComputeOp, FuncOp
from hostir_dialect.symbols import fusions_to_lower
from hostir_dialect.tensor_type import ParallelKind, tensor_type

from .fusion_rewriting import retype, tensors
from .sharding_policy import (
    PROPAGATED_TYPES,
    ShardingError,
    backward_axis_map,
    forward_axis_map,
    is_annotated,
    propagate_parallel_types,
)

ValueKey = tuple[object, int]
"""(owner, index) of a value: stable while values are replaced by retyped ones."""


def _key(value: SSAValue) -> ValueKey:
    return value.owner, value.index  # type: ignore[attr-defined]  # results and block arguments have an index


def propagate_in_function(func: FuncOp) -> None:
    frozen = {_key(v) for v, _ in tensors(func) if is_annotated(tensor_type(v))}
    ops = [op for op in func.body.block.ops if isinstance(op, ComputeOp)]
    before = None
    while before != (after := [v.type for v, _ in tensors(func)]):
        before = after
        _forward(ops, frozen)
        _backward(func, ops, frozen)
    _place_the_rest_on_the_only_mesh(func)
    func.update_function_type()


def _place_the_rest_on_the_only_mesh(func: FuncOp) -> None:
    """Tensors no sweep reaches (a chain connected to no tensor with a mesh, such as a
    dead one) are replicated on the fusion's mesh when it uses exactly one."""
    meshes = {tensor_type(v).mesh for v, _ in tensors(func)} - {None}
    if len(meshes) != 1:
        return
    (mesh,) = meshes
    for value, _ in tensors(func):
        if tensor_type(value).mesh is None:
            retype(value, tensor_type(value).with_(mesh=mesh))


def _forward(ops: list[ComputeOp], frozen: set[ValueKey]) -> None:
    for op in ops:
        if _key(op.result) in frozen:
            continue
        for reference in op.sharding_reference_operands():
            _propagate(reference, op.result, forward_axis_map(op, reference), PROPAGATED_TYPES)


def _backward(func: FuncOp, ops: list[ComputeOp], frozen: set[ValueKey]) -> None:
    for op in reversed(ops):
        for index in _tensor_operand_indices(op):
            operand = op.operands[index]  # re-read: retyping replaces the value
            if _key(operand) in frozen:
                continue
            # A fusion input receives a mesh and nothing else (see the module docstring).
            types = () if operand.owner is func.body.block else PROPAGATED_TYPES
            _propagate(op.result, operand, backward_axis_map(op, operand), types)


def _propagate(source: SSAValue, target: SSAValue, axis_map: dict[int, int], types: Iterable[ParallelKind]) -> None:
    """Give `target` the mesh of `source`, and each of its parallel types that maps exactly."""
    reference = tensor_type(source)
    new_type = propagate_parallel_types(reference, tensor_type(target), axis_map, ())
    for parallel in types:
        try:
            new_type = propagate_parallel_types(reference, new_type, axis_map, (parallel,))
        except ShardingError:
            continue  # not exact: stop propagating this type here (see the module docstring)
    if new_type != tensor_type(target):
        retype(target, new_type)


def _tensor_operand_indices(op: ComputeOp) -> list[int]:
    inputs = op.tensor_inputs()
    return [i for i, v in enumerate(op.operands) if any(v is t for t in inputs)]


@dataclass(frozen=True)
class PropagateShardings(ModulePass):
    """Give every tensor of a user fusion a mesh and the sharding of the tensors the user annotated."""

    name = "propagate-shardings"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        for func in fusions_to_lower(op):
            propagate_in_function(func)
