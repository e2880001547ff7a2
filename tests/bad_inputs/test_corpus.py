"""Every case of the bad-input corpus meets its expectation (see README.md here): no
traceback, no hang, no exit 0 with garbage, no lost file, every diagnostic where and as
expected. All cases run once, on two worker processes, when the first test needs them.
"""

from __future__ import annotations

import pytest
from run_corpus import OUTCOMES, all_cases, run_all

CASES = all_cases()


@pytest.fixture(scope="module")
def results(request) -> dict:
    """The results of the selected cases (`-k` selects), all run at once."""
    selected = [item.callspec.params["case"] for item in request.session.items
                if getattr(item, "module", None) is request.module and hasattr(item, "callspec")]
    return {r.case.path: r for r in run_all(selected, jobs=2)}


@pytest.mark.parametrize("case", CASES, ids=[c.path.removeprefix("tests/bad_inputs/") for c in CASES])
def test_case(case, results) -> None:
    result = results[case.path]
    if result.outcome == "skipped":
        pytest.skip(result.detail)
    assert result.outcome == "ok", f"{result.outcome} ({OUTCOMES[result.outcome]}): {result.detail}"
