"""Every pass and pipeline hostir knows, by CLI name.

A pass lives in `passes/<name_in_snake_case>.py` as a `ModulePass` whose `name` is its CLI
name; it is imported only when asked for, so the CLI starts fast. A pipeline is a named
sequence of passes that the pass manager expands, so options such as disabling a pass or
printing IR after one apply to its members.
"""

from __future__ import annotations

import importlib

from xdsl.passes import ModulePass

PASS_NAMES: tuple[str, ...] = (
    "propagate-shardings",
    "decompose-reshardings",
    "finalize-multidevice-domains",
    "lower-to-host",
    "stream-parallel-type",
    "convert-op-to-communication",
    "insert-deallocations",
)

PIPELINES: dict[str, tuple[str, ...]] = {
    # DESIGN.md "The pipeline", in order.
    "hostir-lower": PASS_NAMES,
}


def pass_class(name: str) -> type[ModulePass]:
    module = importlib.import_module(f"passes.{name.replace('-', '_')}")
    for value in vars(module).values():
        if isinstance(value, type) and issubclass(value, ModulePass) and getattr(value, "name", None) == name:
            return value
    raise LookupError(f"module passes.{name.replace('-', '_')} defines no pass named {name!r}")
