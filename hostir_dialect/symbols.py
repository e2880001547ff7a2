"""Queries on a module (its functions, the devices it names), written once for the
passes and the runtime.

A module holds `fusion.func`s and `hir.program`s at its top level. A `fusion.func` that a
`hir.post_on_stream` calls is a *kernel unit* of a host program (lower-to-host outlined
it); every other `fusion.func` is a *user fusion*. A user fusion with the signature of a
host program of the module is that program's *reference* (what `hostir-run` checks it
against); the other user fusions are still to be lowered.
"""

from __future__ import annotations

from collections.abc import Iterator

from xdsl.dialects.builtin import ModuleOp
from xdsl.ir import Operation

from .functions import FunctionLikeOp
from .fusion import FuncOp
from .hir import CollectiveOp, PostOnStreamOp, ProgramOp
from .tensor_type import TensorType


def ops_in(root: Operation) -> Iterator[Operation]:
    """`root` and every op nested in it, in the order of `root.walk()`. xDSL's walk nests a
    generator per region level, so each op passes up through one frame per op around it:
    quadratic in the nesting depth (9 s for 1,400 nested loops), where this is linear."""
    pending = [root]
    while pending:
        op = pending.pop()
        yield op
        for region in reversed(op.regions):
            for block in reversed(region.blocks):
                pending.extend(reversed(list(block.ops)))


def functions(module: ModuleOp) -> list[FunctionLikeOp]:
    """The module's `fusion.func`s and `hir.program`s, in order."""
    return [op for op in module.ops if isinstance(op, FunctionLikeOp)]


def programs(module: ModuleOp) -> list[ProgramOp]:
    return [op for op in module.ops if isinstance(op, ProgramOp)]


def kernel_unit_names(module: ModuleOp) -> set[str]:
    """Names of the `fusion.func`s some `hir.post_on_stream` calls."""
    return {op.callee_name() for op in module.walk() if isinstance(op, PostOnStreamOp)}


def user_fusions(module: ModuleOp) -> list[FuncOp]:
    """The `fusion.func`s that are not kernel units, in order."""
    units = kernel_unit_names(module)
    return [op for op in module.ops if isinstance(op, FuncOp) and op.sym_name.data not in units]


def lookup(module: ModuleOp, name: str) -> FunctionLikeOp | None:
    """The `fusion.func` or `hir.program` named `name` (without `@`), if any."""
    return next((op for op in functions(module) if op.sym_name.data == name), None)


def reference_of(module: ModuleOp, program: ProgramOp) -> FuncOp | None:
    """The user fusion with `program`'s signature: its eager reference, if any."""
    return next((f for f in user_fusions(module) if f.function_type == program.function_type), None)


def fusions_to_lower(module: ModuleOp) -> list[FuncOp]:
    """The user fusions that are not the reference of a host program, in order."""
    references = {reference_of(module, program) for program in programs(module)}
    return [f for f in user_fusions(module) if f not in references]


def devices_needed(module: Operation) -> tuple[int, str, Operation | None]:
    """How many ranks the module's meshes and teams need (largest device id + 1; 0 when
    it names no device), the first mesh or team that needs that many, and its op."""
    needed, where, found = 0, "", None
    for device, what, op in _named_devices(module):
        if device + 1 > needed:
            needed, where, found = device + 1, what, op
    return needed, where, found


def _named_devices(module: Operation) -> Iterator[tuple[int, str, Operation]]:
    """(largest device id, "mesh [..]" or "team [..]", op) of every mesh and team in the module."""
    for op in module.walk():
        arguments = (arg for region in op.regions for block in region.blocks for arg in block.args)
        for value in (*arguments, *op.results):
            mesh = value.type.mesh if isinstance(value.type, TensorType) else None
            if mesh is not None and mesh.devices:
                yield max(mesh.devices), f"mesh {mesh}", op
        if isinstance(op, CollectiveOp) and op.teams.devices:
            yield max(op.teams.devices), f"team {op.teams}", op
