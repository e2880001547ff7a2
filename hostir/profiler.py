"""nvFuser's `PythonProfiler`: what `fd.execute` ran inside a `with PythonProfiler() as
prof:` block, one entry per host-program op in `prof.profile.kernel_profiles`, each with
its `scheduler`: "communication" for a collective or transfer (its wait is part of it),
"compute" for a kernel or a kernel unit, "host" for the rest (buffers, streams)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import ClassVar

from hostir.runtime.trace import DEVICE_CATEGORIES, Trace

WAIT = "hir.wait"


@dataclass(frozen=True)
class KernelProfile:
    name: str
    """The op's label: its name and source location."""
    scheduler: str


@dataclass
class FusionProfile:
    kernel_profiles: list[KernelProfile] = field(default_factory=list)


class PythonProfiler:
    """Records the ops of every `fd.execute` inside the block (runs them traced)."""

    active: ClassVar[PythonProfiler | None] = None

    def __init__(self) -> None:
        self.profile = FusionProfile()

    def __enter__(self) -> PythonProfiler:
        if PythonProfiler.active is not None:
            raise RuntimeError("a PythonProfiler is already recording")
        PythonProfiler.active = self
        return self

    def __exit__(self, *exc_info) -> None:
        PythonProfiler.active = None

    def record(self, trace: Trace) -> None:
        """Each op label of one traced run, in run order, but waits: a communication and
        its wait are one kernel of nvFuser's. Host ranges only: on GPUs the device work an
        op launches carries its label too (runtime/trace.py), and is the same op."""
        labels = sorted((e for e in trace.events if e.get("ph") == "X" and e.get("name") in trace.kinds
                         and e.get("cat") not in DEVICE_CATEGORIES and not e["name"].startswith(WAIT)),
                        key=lambda e: e["ts"])
        self.profile.kernel_profiles += [KernelProfile(e["name"], trace.kinds[e["name"]]) for e in labels]
