"""Shared by every test: the IR is verified after every pass (mlir-opt's --verify-each;
the tools verify only after the pipeline by default), so that a pass that breaks the IR
fails at that pass; every program run on CPU ranks checks that its streams' work is
ordered (runtime/hazards.py: a race that program order hides on CPUs fails there too);
ranks and CLIs started by the tests inherit both settings. And `count_calls`, to see what
a call did or did not do again."""

import os

import pytest

from hostir.passes.pipeline import VERIFY_EACH_VARIABLE
from hostir.runtime.hazards import ENVIRONMENT as CHECK_HAZARDS_VARIABLE

os.environ.setdefault(VERIFY_EACH_VARIABLE, "1")
os.environ.setdefault(CHECK_HAZARDS_VARIABLE, "1")


@pytest.fixture
def count_calls(monkeypatch):
    """`count_calls(owner, name)` wraps `owner.name` for the test: the list of its calls."""

    def count(owner: object, name: str) -> list:
        calls: list = []
        original = getattr(owner, name)

        def wrapper(*args, **kwargs):
            calls.append(args)
            return original(*args, **kwargs)

        monkeypatch.setattr(owner, name, wrapper)
        return calls

    return count
