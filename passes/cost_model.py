"""A small cost model of one machine, for the lowering's `auto` decisions (docs/copy_engine.md).

Constants are measured on the machine by `benchmarks/machine_constants.py` and kept in
`passes/machines/<name>.json`; `Machine.load(name)` reads them. Times are in milliseconds.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

MACHINES = Path(__file__).resolve().parent / "machines"
DEFAULT_MACHINE = "h200x2"


@dataclass(frozen=True)
class Link:
    """A transfer: a fixed latency, then bytes at a bandwidth."""

    latency_us: float
    gbps: float

    def ms(self, nbytes: float) -> float:
        return self.latency_us / 1e3 + nbytes / (self.gbps * 1e6)


@dataclass(frozen=True)
class Machine:
    name: str
    matmul_tflops: dict[str, float]
    """Sustained dense matmul rate by element type (bf16, f16, f32)."""
    matmul_half_rate_gflop: float
    """The work at which a matmul reaches half its sustained rate (launch and tail effects)."""
    memory_gbps: float
    copy_engine: Link
    """A copy into a peer's memory on the copy engines."""
    nccl: dict[str, Link]
    """A collective of NCCL, by op name; bytes: what each rank contributes."""
    signal_us: float
    """From a flag set in a peer's memory to the stream waiting for it moving on."""
    matmul_slowdown: dict[str, float]
    """How much longer a matmul takes while transfers of a transport run beside it."""

    @staticmethod
    def load(name: str = DEFAULT_MACHINE) -> Machine:
        path = MACHINES / f"{name}.json"
        if not path.is_file():
            known = ", ".join(sorted(p.stem for p in MACHINES.glob("*.json")))
            raise ValueError(f"no cost model for machine {name!r}; known: {known}")
        data = json.loads(path.read_text())
        return Machine(
            name=data["name"],
            matmul_tflops=data["matmul_tflops"],
            matmul_half_rate_gflop=data["matmul_half_rate_gflop"],
            memory_gbps=data["memory_gbps"],
            copy_engine=Link(**data["copy_engine"]),
            nccl={kind: Link(**link) for kind, link in data["nccl"].items()},
            signal_us=data["signal_us"],
            matmul_slowdown=data["matmul_slowdown"],
        )

    def matmul_ms(self, flops: float, element_type: str) -> float:
        rate = self.matmul_tflops.get(element_type, min(self.matmul_tflops.values())) * 1e9
        return flops / rate * (1 + self.matmul_half_rate_gflop * 1e9 / max(flops, 1.0))

    def collective_ms(self, collective: str, copy_engine: bool, link_bytes: float) -> float:
        """One collective of `collective` (an op name) whose every rank sends `link_bytes`
        to each peer (all-gather: its shard; reduce-scatter: one output chunk; all-reduce:
        its buffer) on NCCL or on the copy engines (all peers at once, then one signal)."""
        if copy_engine:
            return self.copy_engine.ms(link_bytes) + self.signal_us / 1e3
        return self.nccl[collective].ms(link_bytes)
