"""nvFuser's multi-device Python tests (multidevice/, as nvFuser writes them) on 2 gloo CPU
ranks, and on 4 those that need 4 (a 3-D mesh of 1 x 2 x 2 devices).

Every test passes, or is skipped by nvFuser's own condition on that world, or is one of
the EXCEPTIONS below, each with its reason; an exception may pass instead (the branch
that lifts it was merged). Never a wrong value, and every refusal names the user's call
(a located FusionDefinitionError or HostIRError). `python -m tests.nvfuser_port.runner
--ranks 2,4` runs all of them on both worlds; on 2 GPUs, `python -m tests.nvfuser_port.runner
--ranks 2 --backend nccl` also runs the ones marked `gpu`.
"""

from __future__ import annotations

import re

import pytest

from .runner import Outcome, run_port

DYNAMIC_RFACTOR = (
    "crash", r"'fusion\.reshape' op failed: RuntimeError: only one dimension can be inferred",
    "an rFactor of a contraction over dynamic extents; lifted by branch `dynamic` (issue 25)",
)
TRIANGLE_ON_A_3D_MESH = (
    "crash|refused", f"{DYNAMIC_RFACTOR[1]}|'fusion\\.set' op Broadcast only supported a 1D mesh",
    "an rFactor of dynamic extents (branch `dynamic` lifts it); with `dynamic` merged, a replicated operand is "
    "broadcast onto the 3-D mesh, which the broadcast's lowering takes on 1-D meshes only",
)
EXCEPTIONS: dict[str, tuple[str, str, str]] = {
    "test_multidevice.py::test_pointwise": (
        "refused", r"input and result buffers allocate their axes in different orders",
        "an all-gather of a whole dynamic axis (`? didx`, one element per device); lifted by branch `dynamic`",
    ),
    "test_communication.py::test_allreduce": DYNAMIC_RFACTOR,
    "test_matmul.py::test_row_parallel_linear": DYNAMIC_RFACTOR,
    "test_matmul.py::test_row_parallel_linear_with_bias": DYNAMIC_RFACTOR,
    "test_matmul.py::test_data_and_tensor_parallel_mlp": DYNAMIC_RFACTOR,
    "test_multidevice.py::test_privatize_squeeze": DYNAMIC_RFACTOR,
    "test_multidevice.py::test_reduction_with_2d_mesh": DYNAMIC_RFACTOR,
    "test_cpu_twins.py::test_column_parallel_linear": DYNAMIC_RFACTOR,
    "test_cpu_twins.py::test_row_parallel_linear": DYNAMIC_RFACTOR,
    "test_cpu_twins.py::test_triangle_updates[incoming]": TRIANGLE_ON_A_3D_MESH,
    "test_cpu_twins.py::test_triangle_updates[outgoing]": TRIANGLE_ON_A_3D_MESH,
}
"""Tests that do not pass on this branch alone: outcome and message (patterns), why."""

FOUR_RANKS = "pointwise_vectorization or triangle_updates"
"""What nvFuser runs only where 4 devices divide its mesh (1 x 2 x 2)."""
NVFUSER_SKIP = re.compile(r"divisible by|even split")
"""nvFuser's own skips of a world size its shapes do not divide."""
LOCATED = re.compile(r"^\S+\.py:\d+:\d+: ")
"""A refusal names the user's line: a pass's HostIRError at the op the line made, a
FusionDefinitionError at the call."""


@pytest.fixture(scope="module")
def two_ranks() -> dict[str, Outcome]:
    return run_port(2, backend="gloo")


@pytest.fixture(scope="module")
def four_ranks() -> dict[str, Outcome]:
    return run_port(4, backend="gloo", selection=FOUR_RANKS)


def _unexpected(outcomes: dict[str, Outcome]) -> dict[str, str]:
    found = {}
    for name, o in outcomes.items():
        if o.outcome == "passed" or (o.outcome == "skipped" and NVFUSER_SKIP.search(o.error)):
            continue
        outcome, message, _ = EXCEPTIONS.get(name, ("passed", "", ""))
        if not re.fullmatch(outcome, o.outcome) or not re.search(message, o.error):
            found[name] = f"{o.outcome}: {o.error}"
    return found


def test_every_ported_test_passes_on_two_ranks_or_is_a_known_exception(two_ranks):
    assert len(two_ranks) >= 55, sorted(two_ranks)
    assert not _unexpected(two_ranks)


def test_the_tests_of_four_devices_pass_on_four_ranks(four_ranks):
    assert {"test_multidevice.py::test_pointwise_vectorization"} <= set(four_ranks)
    assert not _unexpected(four_ranks)
    assert four_ranks["test_multidevice.py::test_pointwise_vectorization"].outcome == "passed"


def test_no_wrong_value_and_every_refusal_is_located(two_ranks, four_ranks):
    for outcomes in (two_ranks, four_ranks):
        assert not [name for name, o in outcomes.items() if o.outcome == "wrong"]
        refused = {name: o.error.split(": ", 1)[1] for name, o in outcomes.items() if o.outcome == "refused"}
        assert all(LOCATED.search(message) for message in refused.values()), refused


def test_nine_tenths_of_the_literal_tests_run_where_no_other_branch_is_needed(two_ranks):
    """nvFuser's tests as written (not the CPU twins), skips by nvFuser's own conditions
    left out; the exceptions that other branches lift counted as not run."""
    literal = {name: o for name, o in two_ranks.items() if not name.startswith("test_cpu_twins")}
    ran = [o for o in literal.values() if o.outcome != "skipped"]
    passed = sum(o.outcome == "passed" for o in ran)
    pending = sum(name in EXCEPTIONS and "branch" in EXCEPTIONS[name][2] for name in literal)
    assert passed >= 0.9 * (len(ran) - pending), f"{passed} of {len(ran)} passed, {pending} wait for other branches"
