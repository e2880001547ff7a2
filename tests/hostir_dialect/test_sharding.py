"""Sharding analysis: which ops move data between devices."""

from __future__ import annotations

import pytest

from hostir_dialect import fusion
from hostir_dialect.context import parse_module
from hostir_dialect.sharding import is_resharding


def reshape(source: str, target: str) -> fusion.ReshapeOp:
    s, t = f"!fusion.tensor<f32[{source}], mesh=[0, 1]>", f"!fusion.tensor<f32[{target}], mesh=[0, 1]>"
    module = parse_module(f"""fusion.func @f(%x: {s}) -> {t} {{
  %y = fusion.reshape %x : {s} -> {t}
  fusion.return %y : {t}
}}""")
    return next(op for op in module.walk() if isinstance(op, fusion.ReshapeOp))


@pytest.mark.parametrize("source, target, moves", [
    # Regression (issue 11, defect 2): merging [2, 4] whose inner axis is sharded: rank 0
    # holds columns 0-1 of both rows, [0, 1, 4, 5], but element block [0, 4) of the result.
    ("2, 4(2 didx, 2)", "8(2 didx, 4)", True),
    ("2 didx, 4", "8(2 didx, 4)", False),          # the outer axis of the merge: local
    ("4(2 didx, 2), 3", "12(2 didx, 6)", False),
    ("8(2 didx, 4)", "2 didx, 4", False),           # a split whose outer part is sharded
    ("8(2 didx, 4)", "4(2 didx, 2), 2", False),
    ("8(2 didx, 4)", "2, 4(2 didx, 2)", True),      # the inner part of a split
    # Regression (TRIAGE C4): a replicated input whose split's inner part the result shards.
    ("8", "2, 4(2 didx, 2)", True),
    ("2", "1, 2 didx", True),
    ("8", "2 didx, 4", True),                       # a scatter of the outer part
])
def test_a_reshape_reshards_unless_the_sharded_axis_leads_its_merge_or_split(source, target, moves):
    assert is_resharding(reshape(source, target)) is moves


def test_ops_of_one_kind_and_input_type_are_told_apart_by_their_result_sharding():
    """is_resharding answers once per shape of op (kind, types, ...): asking the local
    set first must not answer for the gathering one, nor the other way round."""
    sharded, whole = "!fusion.tensor<f32[2 didx, 4], mesh=[0, 1]>", "!fusion.tensor<f32[2, 4], mesh=[0, 1]>"
    module = parse_module(f"""fusion.func @f(%x: {sharded}) -> ({sharded}, {whole}) {{
  %local = fusion.set %x : {sharded} -> {sharded}
  %gathered = fusion.set %x : {sharded} -> {whole}
  fusion.return %local, %gathered : {sharded}, {whole}
}}""")
    local, gathered = (op for op in module.walk() if isinstance(op, fusion.SetOp))
    assert (is_resharding(local), is_resharding(gathered)) == (False, True)
    assert (is_resharding(gathered), is_resharding(local)) == (True, False)
