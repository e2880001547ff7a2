"""A small cost model of one machine, for the lowering's `auto` decisions (docs/copy_engine.md).

Constants are measured on a machine by `hostir-calibrate` (runtime/calibrate.py) into the
user's cache (`$XDG_CACHE_HOME/hostir/machines/<name>.json`, default `~/.cache`), or ship
with hostir in `passes/machines/<name>.json`; `Machine.load(name)` reads the cache first.
A machine is named by its GPU kind and count, `h100x2`; `detect` (the passes' default)
names the GPUs of the machine lowering the program, read from the NVIDIA driver without
importing torch, and falls back to FALLBACK_MACHINE where none is known (no GPU, or a kind
never measured). Times are in milliseconds.
"""

from __future__ import annotations

import json
import os
import re
from dataclasses import dataclass
from pathlib import Path

from xdsl.utils.str_enum import StrEnum

from hostir_dialect import hir


class TransportChoice(StrEnum):
    """The `transport` option of the passes that ask this model: one transport for every
    collective, or the best one per collective (`auto`)."""

    NCCL = "nccl"
    COPY_ENGINE = "copy-engine"
    AUTO = "auto"


MACHINES = Path(__file__).resolve().parent / "machines"
FALLBACK_MACHINE = "h200x2"
DETECT = "detect"
DEFAULT_MACHINE = DETECT
NVIDIA_GPUS = Path("/proc/driver/nvidia/gpus")


def user_machines() -> Path:
    """Where `hostir-calibrate` keeps the constants it measures."""
    cache = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(cache) / "hostir" / "machines"


def machine_file(name: str) -> Path | None:
    """The constants of machine `name`: measured here, else shipped; None if neither."""
    for directory in (user_machines(), MACHINES):
        path = directory / f"{name}.json"
        if path.is_file():
            return path
    return None


def detected_gpus(root: Path | None = None) -> tuple[str, int] | None:
    """(kind, count) of this machine's NVIDIA GPUs from the driver (`h100`, 2), None if
    it has none (or mixes kinds)."""
    root = root or NVIDIA_GPUS
    kinds = []
    for info in sorted(root.glob("*/information")) if root.is_dir() else []:
        model = re.search(r"^Model:\s*(.*)$", info.read_text(errors="replace"), re.MULTILINE)
        kind = re.search(r"\b([A-Z]+\d{2,4})\b", model.group(1)) if model else None
        if kind:
            kinds.append(kind.group(1).lower())
    return (kinds[0], len(kinds)) if kinds and len(set(kinds)) == 1 else None


def detected_machine(root: Path | None = None) -> str:
    """The name of this machine's cost model: its GPUs' kind and count where constants
    for them exist (pairs: the constants are measured on two GPUs), else the fallback."""
    gpus = detected_gpus(root)
    if gpus is not None:
        name = f"{gpus[0]}x{min(gpus[1], 2)}"
        if machine_file(name) is not None:
            return name
    return FALLBACK_MACHINE


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
    matmul_half_rate_gflop: dict[str, float]
    """By element type, the work at which a matmul reaches half its sustained rate (tail
    effects): per type, as a slow type's fixed time is worth many more flops."""
    memory_gbps: float
    copy_engine: Link
    """A copy into a peer's memory on the copy engines."""
    nccl: dict[str, Link]
    """A collective of NCCL, by op name; bytes: what each rank contributes."""
    signal_us: float
    """From a flag set in a peer's memory to the stream waiting for it moving on."""
    matmul_slowdown: dict[str, float]
    """How much longer a matmul takes while transfers of a transport run beside it."""
    host_us_per_chunk: float
    """The evaluator's host time for one iteration of a stream loop (a collective, a
    matmul, the stream switches and events), run eagerly."""

    @staticmethod
    def load(name: str = DEFAULT_MACHINE) -> Machine:
        """Machine `name`'s constants (`detect`: this machine's, see the module doc)."""
        path = machine_file(detected_machine() if name == DETECT else name)
        if path is None:
            known = sorted({p.stem for d in (user_machines(), MACHINES) if d.is_dir() for p in d.glob("*.json")})
            raise ValueError(f"no cost model for machine {name!r}; known: {', '.join([DETECT, *known])}")
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
            host_us_per_chunk=data["host_us_per_chunk"],
        )

    def matmul_ms(self, flops: float, element_type: str) -> float:
        rate = self.matmul_tflops.get(element_type, min(self.matmul_tflops.values())) * 1e9
        half_rate = self.matmul_half_rate_gflop.get(element_type, max(self.matmul_half_rate_gflop.values())) * 1e9
        return flops / rate * (1 + half_rate / max(flops, 1.0))

    def copy_ms(self, nbytes: float) -> float:
        """A copy within one GPU's memory (it reads and writes every byte)."""
        return 2 * nbytes / (self.memory_gbps * 1e6)

    def collective_ms(self, kind: type[hir.CollectiveOp], transport: hir.Transport, input_bytes: float, team_size: int) -> float:
        """One collective of `kind` whose members each contribute `input_bytes`, on NCCL
        (fitted on that measure) or on the copy engines (per phase: every peer's share
        copied at once, then one signal)."""
        if transport == hir.Transport.COPY_ENGINE:
            share = kind.copy_engine_share_per_peer(input_bytes, team_size)
            return kind.COPY_ENGINE_PHASES * (self.copy_engine.ms(share) + self.signal_us / 1e3)
        return self.nccl[kind.name].ms(input_bytes)

    def posts_ms(self, kind: type[hir.CollectiveOp], transport: hir.Transport, input_bytes: float, team_size: int,
                 posts: int) -> float:
        """`posts` collectives of a stream loop, back to back: each occupies the link for
        its bytes, while the fixed part (start, signal) of all but the first overlaps the
        transfers before it."""
        fixed = self.collective_ms(kind, transport, 0, team_size)
        return posts * (self.collective_ms(kind, transport, input_bytes, team_size) - fixed) + fixed

    def fastest_transport(self, kind: type[hir.CollectiveOp], input_bytes: float, team_size: int,
                          posts: int = 1) -> hir.Transport:
        """NCCL, or the copy engines where `kind` has an algorithm on them and they are
        faster, for `posts` posts of a loop (posts_ms)."""
        if not kind.HAS_COPY_ENGINE_ALGORITHM:
            return hir.Transport.NCCL
        return min(hir.Transport, key=lambda t: self.posts_ms(kind, t, input_bytes, team_size, posts))

    def fastest_collective_ms(self, kind: type[hir.CollectiveOp], input_bytes: float, team_size: int) -> float:
        transport = self.fastest_transport(kind, input_bytes, team_size)
        return self.collective_ms(kind, transport, input_bytes, team_size)
