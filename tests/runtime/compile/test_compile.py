"""The evaluator's compiler split by dialect: one handler registry, built from one module
per group of ops, that covers every op the runtime is given."""

import inspect

import pytest
from xdsl.ir import Dialect

from hostir import runtime
from hostir.runtime import cli, launcher
from hostir.runtime.compile import DEFAULT_NUMBER_OF_STREAMS, HANDLERS, control_flow, fusion_compute, hir_buffers, hir_communication
from hostir_dialect import fusion, hir

GROUPS = {
    "fusion_compute": fusion_compute.HANDLERS,
    "hir_buffers": hir_buffers.HANDLERS,
    "hir_communication": hir_communication.HANDLERS,
    "control_flow": control_flow.HANDLERS,
}
NOT_RUN = {hir.ProgramOp, hir.ReturnOp, fusion.FuncOp, fusion.ReturnOp}
"""Functions and their terminators: the compiler walks their bodies, they have no step."""


def dialect_ops(module) -> list[type]:
    (dialect,) = [value for value in vars(module).values() if isinstance(value, Dialect)]
    return list(dialect.operations)


@pytest.mark.parametrize("op", dialect_ops(hir) + dialect_ops(fusion), ids=lambda op: op.name)
def test_every_hir_and_fusion_op_has_a_handler(op):
    handled = any(cls in HANDLERS for cls in op.__mro__)
    assert handled != (op in NOT_RUN), op.name


def test_each_op_class_is_handled_by_one_group():
    owners: dict[type, list[str]] = {}
    for group, handlers in GROUPS.items():
        for cls in handlers:
            owners.setdefault(cls, []).append(group)
    assert {cls: groups for cls, groups in owners.items() if len(groups) > 1} == {}
    assert set(HANDLERS) == set(owners)


def test_the_default_number_of_streams_is_defined_once():
    def default(function, name="number_of_streams"):
        return inspect.signature(function).parameters[name].default

    assert default(runtime.Evaluator) == default(runtime.execute) == DEFAULT_NUMBER_OF_STREAMS
    assert default(launcher.Job) == default(launcher.run_spmd) == DEFAULT_NUMBER_OF_STREAMS
    assert cli.parse_args(["program.mlir"]).number_of_streams == DEFAULT_NUMBER_OF_STREAMS
