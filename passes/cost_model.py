"""A small cost model of one machine, for the lowering's `auto` decisions (docs/copy_engine.md).

Constants are measured on a machine by `hostir-calibrate` (runtime/calibrate.py) into the
user's cache (`$XDG_CACHE_HOME/hostir/machines/<name>.json`, default `~/.cache`), or ship
with hostir in `passes/machines/<name>.json`; `Machine.load(name)` reads the cache first.
A machine is named by its GPU kind and the number of GPUs its constants were measured on
together, `h100x2`, `h200x4`; `detect` (the passes' default) names the GPUs of the machine
lowering the program, read from the NVIDIA driver without importing torch: constants
measured on all of its GPUs where they exist, else on a pair of its kind, else
FALLBACK_MACHINE (no GPU, or a kind never measured). Times are in milliseconds. Where the ranks sit, node by node, is a
`Topology` (docs/multi_node.md).
"""

from __future__ import annotations

import json
import math
import os
import re
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path

from xdsl.utils.str_enum import StrEnum

from hostir_dialect import hir
from hostir_dialect.copy_engine_facts import copy_engine_algorithm
from hostir_dialect.tensor_type import DYNAMIC, TensorType


class TransportChoice(StrEnum):
    """The `transport` option of the passes that ask this model: one transport for every
    collective, or the best one per collective (`auto`)."""

    NCCL = "nccl"
    COPY_ENGINE = "copy-engine"
    AUTO = "auto"


MACHINES = Path(__file__).resolve().parent / "machines"
FALLBACK_MACHINE = "h200x2"
CALIBRATION_TEAM = 2
"""The members of the collectives behind constants that do not name their `team` (every
machine file before `hostir-calibrate` measured on all of a host's GPUs)."""
SLOWDOWN_GEMM = (16384, 8192, 4096)
"""M, K, N of the bf16 GEMM beside which `hostir-calibrate` measures `matmul_slowdown`, with
a transfer of SLOWDOWN_TRANSFER_BYTES posted after it."""
SLOWDOWN_TRANSFER_BYTES = 128 * 2**20
SLOWDOWN_OF_THE_SHORTER = "the shorter"
"""A machine file's `matmul_slowdown_per` since the fifteenth session; before, the figures
were per ms of the GEMM (`Machine.load` converts them)."""
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
    """The name of this machine's cost model: constants measured on all of its GPUs
    (`h200x4` on four H200), else on a pair of its kind, else the fallback."""
    gpus = detected_gpus(root)
    if gpus is not None:
        kind, count = gpus
        for name in dict.fromkeys((f"{kind}x{count}", f"{kind}x2")):
            if machine_file(name) is not None:
                return name
    return FALLBACK_MACHINE


def matmul_flops(result: TensorType) -> int | None:
    """2 x one rank's multiply-adds of a matmul with this result: its output elements
    times its share of the reduction (None: a dynamic extent)."""
    extents = [result.local_extent(i, stream_sharded=False) for i in range(result.rank)]
    return None if DYNAMIC in extents else 2 * math.prod(extents)


def together_ms(communication_ms: float, matmuls_ms: float, slowdown: float) -> float:
    """Transfers and matmuls running beside each other: the longer, and the share
    (`slowdown`, `Machine.matmul_slowdown`) of the shorter that does not overlap it."""
    return max(communication_ms, matmuls_ms) + slowdown * min(communication_ms, matmuls_ms)


@dataclass(frozen=True)
class Link:
    """A transfer: a fixed latency, then bytes at a bandwidth."""

    latency_us: float
    gbps: float

    def ms(self, nbytes: float) -> float:
        return self.latency_us / 1e3 + nbytes / (self.gbps * 1e6)


@dataclass(frozen=True)
class Topology:
    """How the ranks sit on nodes: node n holds ranks n*R to n*R + R - 1 for R ranks per
    node (torchrun's numbering); None: every rank on one node. Copy engines and symmetric
    memory reach only the GPUs of one node."""

    ranks_per_node: int | None = None

    @staticmethod
    def of(ranks_per_node: int) -> Topology:
        """A lowering option: R ranks per node, or 0 for torchrun's LOCAL_WORLD_SIZE, which
        every rank of a launch sees alike (one node when it is not set)."""
        if ranks_per_node < 0:
            raise ValueError(f"ranks-per-node must be positive (0: LOCAL_WORLD_SIZE), got {ranks_per_node}")
        if ranks_per_node == 0:
            local = os.environ.get("LOCAL_WORLD_SIZE", "")
            if not local.isdigit() or int(local) < 1:
                return Topology()
            ranks_per_node = int(local)
        return Topology(ranks_per_node)

    def spans_nodes(self, team: Sequence[int]) -> bool:
        """Are the team's members on more than one node?"""
        if self.ranks_per_node is None:
            return False
        return len({member // self.ranks_per_node for member in team}) > 1

    def copy_engine_problem(self, team: Sequence[int]) -> str | None:
        """Why the copy engines cannot carry a collective of `team` (None if they can)."""
        if not self.spans_nodes(team):
            return None
        return (f"its team spans nodes of {self.ranks_per_node} ranks each: copy engines and symmetric memory "
                "reach only the GPUs of one node")


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
    """Of the shorter of a transport's transfers and the matmuls beside them, the share that
    does not overlap the longer: NCCL's kernels wait for SMs the matmuls hold (about all of
    it), the copy engines only share the memory's bandwidth with them."""
    host_us_per_chunk: float
    """The evaluator's host time for one iteration of a stream loop (a collective, a
    matmul, the stream switches and events), run eagerly."""
    gpu_us_per_phase: float = 0.0
    """The GPU time each phase of a chunk's collectives adds beyond its transfer, replayed
    from a CUDA graph (a flag's signal and wait between ranks, the streams' events); 0
    in constants measured before it was."""
    inter_node: dict[str, Link] = field(default_factory=dict)
    """An NCCL collective whose team spans nodes, by op name (bytes: what each rank
    contributes), where measured (docs/multi_node.md); a machine without them cannot
    price such a collective."""
    copy_engine_collectives: dict[str, Link] = field(default_factory=dict)
    """A reduction on the copy engines as hostir runs it, whole and replayed from a CUDA
    graph (its pushes, signals, waits and adds), by what each member contributes, by op
    name, where measured (`hostir-calibrate`, on teams of more than two): it prices a
    copy-engine collective of `team` members instead of the sum of its pushes, which
    leaves out what the members' handshakes and contention cost (at four GPUs, where no
    copy-engine all-reduce pipeline beat NCCL run whole, docs/copy_engine.md)."""
    team: int = CALIBRATION_TEAM
    """The members the collectives were measured with, all at work at once (`nccl`,
    `copy_engine`: every member pushing to every other in ring order, `signal_us`,
    `gpu_us_per_phase`): NCCL's bytes are scaled from it to other team sizes."""

    @staticmethod
    def load(name: str = DEFAULT_MACHINE) -> Machine:
        """Machine `name`'s constants (`detect`: this machine's, see the module doc)."""
        path = machine_file(detected_machine() if name == DETECT else name)
        if path is None:
            known = sorted({p.stem for d in (user_machines(), MACHINES) if d.is_dir() for p in d.glob("*.json")})
            raise ValueError(f"no cost model for machine {name!r}; known: {', '.join([DETECT, *known])}")
        data = json.loads(path.read_text())
        machine = Machine(
            name=data["name"],
            matmul_tflops=data["matmul_tflops"],
            matmul_half_rate_gflop=data["matmul_half_rate_gflop"],
            memory_gbps=data["memory_gbps"],
            copy_engine=Link(**data["copy_engine"]),
            nccl={kind: Link(**link) for kind, link in data["nccl"].items()},
            signal_us=data["signal_us"],
            matmul_slowdown=data["matmul_slowdown"],
            host_us_per_chunk=data["host_us_per_chunk"],
            gpu_us_per_phase=data.get("gpu_us_per_phase", 0.0),
            inter_node={kind: Link(**link) for kind, link in data.get("inter_node", {}).items()},
            copy_engine_collectives={kind: Link(**link) for kind, link in data.get("copy_engine_collectives", {}).items()},
            team=data.get("team", CALIBRATION_TEAM),
        )
        return machine if data.get("matmul_slowdown_per") == SLOWDOWN_OF_THE_SHORTER else machine.slowdown_of_the_shorter()

    def slowdown_of_the_shorter(self) -> Machine:
        """The constants with `matmul_slowdown` measured per ms of the GEMM (files written
        before the fifteenth session) read as the model reads it, per ms of the shorter of
        the GEMM and the transfer: converted with this machine's own GEMM rate and lines at
        the sizes `hostir-calibrate` measured it with (a user's cache of an older
        calibration would otherwise charge NCCL beside a GEMM less than half of what it
        measured)."""
        m, k, n = SLOWDOWN_GEMM
        gemm = self.matmul_ms(2 * m * k * n, "bf16")
        transfer = {hir.Transport.NCCL: self.nccl["hir.allgather"].ms(SLOWDOWN_TRANSFER_BYTES),
                    hir.Transport.COPY_ENGINE: self.copy_engine.ms(SLOWDOWN_TRANSFER_BYTES)}
        shares = {name: round(min(1.0, share * gemm / min(gemm, transfer[hir.Transport(name)])), 3)
                  for name, share in self.matmul_slowdown.items()}
        return replace(self, matmul_slowdown=shares)

    def replayed(self) -> Machine:
        """The constants as a program replayed from a CUDA graph meets them: a copy-engine
        phase's fixed part is what a replayed phase was measured to add
        (`gpu_us_per_phase`, which every phase of every post pays), not the intercepts of
        eager copies and flag ping-pongs (`copy_engine.latency_us`, `signal_us`), which
        hold the host's launches. Constants measured before `gpu_us_per_phase` existed
        stay as they are."""
        if self.gpu_us_per_phase == 0.0:
            return self
        return replace(self, copy_engine=Link(0.0, self.copy_engine.gbps), signal_us=0.0)

    def matmul_ms(self, flops: float, element_type: str) -> float:
        rate = self.matmul_tflops.get(element_type, min(self.matmul_tflops.values())) * 1e9
        half_rate = self.matmul_half_rate_gflop.get(element_type, max(self.matmul_half_rate_gflop.values())) * 1e9
        return flops / rate * (1 + half_rate / max(flops, 1.0))

    def copy_ms(self, nbytes: float) -> float:
        """A copy within one GPU's memory (it reads and writes every byte)."""
        return self.memory_ms(2 * nbytes)

    def memory_ms(self, nbytes: float) -> float:
        """A kernel bound by memory that reads and writes `nbytes` in all."""
        return nbytes / (self.memory_gbps * 1e6)

    def phases_ms(self, kind: type[hir.CollectiveOp], transport: hir.Transport, input_bytes: float,
                  team_size: int, spans_nodes: bool = False) -> list[float]:
        """One collective of `kind` whose members each contribute `input_bytes`, phase by
        phase (each waits for the one before): NCCL's one (fitted on that measure for
        `team` members, its bytes scaled to `team_size` as its ring's are;
        `inter_node` for a team that spans nodes), or the copy engines'
        (hostir_dialect/copy_engine_facts.py): as measured whole for a team of `team`
        (`copy_engine_collectives`, its phases alike), else per phase the peers' shares one
        after the other, then one signal; the local reduction (D chunks read, one written)
        belongs to the last phase (the all-reduce's second reduces, then pushes)."""
        algorithm = copy_engine_algorithm(kind.name)
        if transport == hir.Transport.COPY_ENGINE:
            assert not spans_nodes, "the copy engines reach only one node"
            assert algorithm is not None  # asked only where the copy engines can carry it
            measured = self.copy_engine_collectives.get(kind.name)
            if measured is not None and team_size == self.team:
                return [measured.ms(input_bytes) / algorithm.phases] * algorithm.phases
            # A phase's pushes run one after the other on its communication stream, each
            # at the bandwidth of one copy into a peer.
            pushes = (team_size - 1) * self.copy_engine.ms(algorithm.share_per_peer(input_bytes, team_size))
            phases = [pushes + self.signal_us / 1e3] * algorithm.phases
            phases[-1] += self.memory_ms(algorithm.reduced(input_bytes, team_size))
            return phases
        if spans_nodes:
            return [self.inter_node[kind.name].ms(input_bytes)]
        # Measured on `team` members; NCCL's ring sends what the copy engines' algorithm
        # sends (2(D-1)/D of the input for an all-reduce), so the bytes scale by it.
        scale = algorithm.sent(1.0, team_size) / algorithm.sent(1.0, self.team) if algorithm else 1.0
        return [self.nccl[kind.name].ms(input_bytes * scale)]

    def collective_ms(self, kind: type[hir.CollectiveOp], transport: hir.Transport, input_bytes: float, team_size: int,
                      spans_nodes: bool = False) -> float:
        """One collective of `kind` whose members each contribute `input_bytes`, all its phases."""
        return sum(self.phases_ms(kind, transport, input_bytes, team_size, spans_nodes))

    def prices(self, kind: type[hir.CollectiveOp], spans_nodes: bool) -> bool:
        """Does the model know what a collective of `kind` costs (measured constants)?"""
        return kind.name in (self.inter_node if spans_nodes else self.nccl)

    def posts_ms(self, kind: type[hir.CollectiveOp], transport: hir.Transport, input_bytes: float, team_size: int,
                 posts: int, spans_nodes: bool = False) -> float:
        """`posts` collectives of a stream loop, back to back: each occupies the link for
        its bytes, while the fixed part (start, signal) of all but the first overlaps the
        transfers before it."""
        fixed = self.collective_ms(kind, transport, 0, team_size, spans_nodes)
        return posts * (self.collective_ms(kind, transport, input_bytes, team_size, spans_nodes) - fixed) + fixed

    def beside_ms(self, kind: type[hir.CollectiveOp], transport: hir.Transport, input_bytes: float, team_size: int,
                  posts: int, matmuls_ms: float, spans_nodes: bool = False) -> float:
        """`posts` posts of a loop (posts_ms) and `matmuls_ms` of matmuls running beside
        them (`together`), and the GPU's cost of every phase of every post
        (`gpu_us_per_phase`, as choose-pipelining charges it)."""
        communication = self.posts_ms(kind, transport, input_bytes, team_size, posts, spans_nodes)
        phases = len(self.phases_ms(kind, transport, input_bytes, team_size, spans_nodes))
        together = together_ms(communication, matmuls_ms, self.matmul_slowdown[transport])
        return together + posts * phases * self.gpu_us_per_phase / 1e3

    def copy_engines_unpriced(self, kind: type[hir.CollectiveOp], team_size: int) -> str | None:
        """Why this model does not price `kind` on the copy engines for a team of
        `team_size` (None where it does). A reduction of more than two members is priced
        only as measured whole on a team of its size (`copy_engine_collectives`): priced by
        its pushes, those of four GPUs looked faster than NCCL and ran slower than NCCL
        run whole (docs/copy_engine.md, "At four GPUs")."""
        algorithm = copy_engine_algorithm(kind.name)
        if algorithm is None or not algorithm.reduces or team_size <= CALIBRATION_TEAM:
            return None
        if team_size == self.team and kind.name in self.copy_engine_collectives:
            return None
        return (f"a copy-engine {kind.name.removeprefix('hir.')} of {team_size} members is priced only as measured "
                f"on {team_size} GPUs (hostir-calibrate there), which machine {self.name} was not")

    def fastest_transport(self, kind: type[hir.CollectiveOp], input_bytes: float, team_size: int,
                          posts: int = 1, matmuls_ms: float = 0.0, copy_engines: bool = True) -> hir.Transport:
        """NCCL, or the copy engines where they can carry the team (`copy_engines`: listed,
        on one node), `kind` has an algorithm on them the model prices for the team
        (`copy_engines_unpriced`) and they are faster, for `posts` posts of a loop beside
        `matmuls_ms` of matmuls (beside_ms: NCCL's kernels slow the matmuls more than the
        copy engines' transfers do)."""
        if copy_engine_algorithm(kind.name) is None or not copy_engines or self.copy_engines_unpriced(kind, team_size):
            return hir.Transport.NCCL
        return min(hir.Transport, key=lambda t: self.beside_ms(kind, t, input_bytes, team_size, posts, matmuls_ms))

    def fastest_phases_ms(self, kind: type[hir.CollectiveOp], input_bytes: float, team_size: int,
                          spans_nodes: bool = False, copy_engines: bool = True) -> list[float]:
        """One collective run once, whole, on its fastest transport, phase by phase (phases_ms)."""
        transport = self.fastest_transport(kind, input_bytes, team_size, copy_engines=copy_engines and not spans_nodes)
        return self.phases_ms(kind, transport, input_bytes, team_size, spans_nodes)
