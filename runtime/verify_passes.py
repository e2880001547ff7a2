"""Numerical verification of a pass pipeline (`hostir-opt --verify-each-pass-numerically`):
the module is run before the first pass and after each one on the same random inputs, and
the first pass that changes an output is reported, with the op that defines that output
in the IR after the pass, located, and the error.

Before lower-to-host the module holds a fusion: its eager reference semantics
(`run_fusion`) run on the global inputs. From lower-to-host on it holds a host program:
each rank gets its shards of the inputs (`shard_tensor`) and runs it, on CPU ranks with
gloo spawned by the launcher when the program names several devices, and each rank's
outputs are compared with its shards of the reference outputs (so replicated copies are
all checked). Nothing runs in this process: a module may loop for ever, or compute for
hours, so every run is in a launched process, each launch stopped after `timeout`
seconds (hostir-opt `--run-timeout`). The fusions (and the host programs, when they need
one rank) run in one launch of one rank, the host programs of several ranks in one launch
of their own, since starting ranks costs seconds; they run one after the other, with a
barrier in between on several ranks: when one fails, every earlier one has completed on
every rank, and the first pass that changed the outputs is still the one reported. A
host program's failure is located in the IR after that pass (`<IR after NAME>:line:col`,
as `--print-ir-after NAME` prints it), a fusion's where its ops were written.

The passes cannot import this module (docs/architecture.md): hostir-opt finds
`NumericalCheck` through the entry point `hostir.pass_checks: numerical` (pyproject.toml).
From Python: `passes.lower(module, PassManagerOptions(check=NumericalCheck()))`.
"""

from __future__ import annotations

import sys
import tempfile
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TextIO, cast

import torch
import torch.distributed as dist
from xdsl.dialects.builtin import ModuleOp
from xdsl.ir import Attribute, Operation
from xdsl.passes import ModulePass
from xdsl.utils.exceptions import DiagnosticException

from hostir.passes.pipeline import DEFAULT_RUN_TIMEOUT
from hostir_dialect import hir
from hostir_dialect.context import parse_module
from hostir_dialect.diagnostics import HostIRError, located_text, op_error
from hostir_dialect.functions import FunctionLikeOp
from hostir_dialect.sharding import communicates, largest_device
from hostir_dialect.symbols import lookup, programs, user_fusions
from hostir_dialect.tensor_type import DYNAMIC, TensorType

from .evaluator import Evaluator, ExecutionError
from .launcher import SpmdError, check_world, launch
from .layouts import random_tensor, shard_tensor, unshard
from .reference import run_fusion

RUN_FAILURES = (ExecutionError, DiagnosticException, ValueError)
"""How running a module fails: a refusal when it is compiled, an error when it runs."""


@dataclass
class Snapshot:
    """The module after one pass (or before the first: `after` is None)."""

    after: str | None
    module: ModuleOp

    @property
    def label(self) -> str:
        return "the input" if self.after is None else self.after


@dataclass
class Failed:
    """A module that did not run: the error, located in its IR."""

    message: str


class Unlowered:
    """A host program that cannot run yet, by design: between lower-to-host and
    convert-op-to-communication it still holds compute ops that need a communication,
    which the evaluator refuses (they would compute on local shards)."""


Outputs = dict[int | None, list]
"""Outputs by rank: local shards on each rank of a host program; rank None: the global
outputs of a fusion."""

Outcome = Outputs | Failed | Unlowered


class NumericalCheck:
    """The `PassCheck` of `--verify-each-pass-numerically` (see the module doc)."""

    def __init__(self, seed: int = 0, number_of_streams: int = 2, timeout: float = DEFAULT_RUN_TIMEOUT,
                 collective_timeout: float = 60, report: TextIO | None = None):
        self.seed = seed
        self.number_of_streams = number_of_streams
        self.timeout = timeout
        self.collective_timeout = collective_timeout
        self.report = report
        self.snapshots: list[Snapshot] = []

    def start(self, module: ModuleOp) -> None:
        self.snapshots = [Snapshot(None, module.clone())]

    def after_pass(self, module_pass: ModulePass, module: ModuleOp) -> None:
        self.snapshots.append(Snapshot(module_pass.name, module.clone()))

    def finish(self) -> None:
        if len(self.snapshots) < 2:
            return  # no pass ran: nothing to compare
        source = self.snapshots[0]
        name = followed_function(source.module).sym_name.data
        inputs = random_inputs(function_of(source, name), self.seed)
        runs = self.outcomes(name, inputs)
        _, reference = next(runs)
        if not isinstance(reference, dict):
            problem = reference.message if isinstance(reference, Failed) else "its ops still need communications"
            raise HostIRError(f"error: --verify-each-pass-numerically cannot run the input: {problem}")
        expected = global_outputs(function_of(source, name), reference)
        unchecked: list[str] = []  # passes since the last snapshot that ran
        for snapshot, outcome in runs:
            unchecked.append(snapshot.label)
            if not isinstance(outcome, Unlowered):
                compare(snapshot, name, expected, outcome, unchecked)
                unchecked = []
        world = self.world_size()
        spawned = world > 1 and any(runnable(function_of(s, name)) for s in self.snapshots)
        where = f"host programs on {world} ranks" if spawned else "in one process"
        kept = len(self.snapshots) - 1 - len(unchecked)
        note = f"; not run after {_passes(unchecked)}, whose IR still needs communications" if unchecked else ""
        print(f"verify-each-pass-numerically: {kept} pass(es) keep the outputs of @{name} "
              f"(seed {self.seed}, {where}){note}", file=self.report or sys.stderr)

    def world_size(self) -> int:
        return max((largest_device(s.module) or 0) + 1 for s in self.snapshots)

    def outcomes(self, name: str, inputs: list[torch.Tensor]) -> Iterator[tuple[Snapshot, Outcome]]:
        """Every snapshot's outputs, in pipeline order, each launch started when the first
        snapshot it runs is reached (see the module doc)."""
        world = self.world_size()
        ran: dict[int, Outcome] = {}
        for index, snapshot in enumerate(self.snapshots):
            ranks = self.ranks_for(snapshot, name, world)
            if ranks is None:
                yield snapshot, Unlowered()
                continue
            if id(snapshot) not in ran:
                if any(isinstance(outcome, Failed) for outcome in ran.values()):
                    return  # an earlier run failed, and that ends the comparison
                later = [s for s in self.snapshots[index:] if self.ranks_for(s, name, world) == ranks]
                ran.update(zip(map(id, later), self.run(later, name, inputs, ranks)))
            yield snapshot, ran[id(snapshot)]

    def ranks_for(self, snapshot: Snapshot, name: str, world: int) -> int | None:
        """On how many ranks the snapshot runs (None: it does not run, see `Unlowered`)."""
        function = function_of(snapshot, name)
        if not isinstance(function, hir.ProgramOp):
            return 1
        return world if runnable(function) else None

    def run(self, snapshots: Sequence[Snapshot], name: str, inputs: list[torch.Tensor], ranks: int) -> list[Outcome]:
        """The outcomes of `snapshots`, run one after the other on `ranks` launched ranks
        within `timeout` seconds, up to the first that fails."""
        try:
            check_world(ranks, "gloo")  # before the inputs are sharded for every rank
        except ValueError as error:
            raise HostIRError(f"error: --verify-each-pass-numerically cannot run @{name}: {error}") from None
        runs = [Run.of(s, name, inputs, ranks) for s in snapshots]
        with tempfile.TemporaryDirectory(prefix="hostir-verify-") as progress:
            try:
                launch(run_in_turn, ranks, (runs, name, self.number_of_streams, progress), backend="gloo",
                       timeout=self.timeout, collective_timeout=self.collective_timeout)
                failure = None
            except SpmdError as error:
                failure = Failed(str(error))
            return completed(Path(progress), runs, ranks, failure)


@dataclass
class Run:
    """One snapshot's function to run in a launched process: its text, and each rank's
    inputs (a fusion: the global inputs, on one rank)."""

    label: str
    text: str
    is_program: bool
    inputs: list[list]

    @staticmethod
    def of(snapshot: Snapshot, name: str, inputs: list[torch.Tensor], ranks: int) -> Run:
        function = function_of(snapshot, name)
        if isinstance(function, hir.ProgramOp):
            return Run(snapshot.label, str(snapshot.module), True, shards_per_rank(function, inputs, ranks))
        return Run(snapshot.label, located_text(snapshot.module), False, [inputs])


def runnable(function: FunctionLikeOp) -> bool:
    """Is `function` a host program the evaluator runs (see `Unlowered`)? Not before
    stream-parallel-type either: a tensor allocated one stream chunk at a time needs
    the stream loop that pass builds."""
    return isinstance(function, hir.ProgramOp) and not any(
        communicates(op) or any(isinstance(r.type, TensorType) and r.type.stream_allocated for r in op.results)
        for op in function.walk()
    )


def _passes(names: Sequence[str]) -> str:
    quoted = [f"'{n}'" for n in names]
    return f"pass {quoted[0]}" if len(quoted) == 1 else f"passes {', '.join(quoted[:-1])} and {quoted[-1]}"


def followed_function(module: ModuleOp) -> FunctionLikeOp:
    """The function whose outputs are compared: the module's program, else its first
    user fusion (lower-to-host turns it into a program of the same name)."""
    found = programs(module) or user_fusions(module)
    if not found:
        raise HostIRError("error: --verify-each-pass-numerically needs a fusion.func or a hir.program to run")
    return found[0]


def function_of(snapshot: Snapshot, name: str) -> FunctionLikeOp:
    found = lookup(snapshot.module, name)
    if found is None:
        raise HostIRError(f"error: pass '{snapshot.after}' removed @{name}, whose outputs are compared")
    return found


def random_inputs(function: FunctionLikeOp, seed: int) -> list[torch.Tensor]:
    generator = torch.Generator().manual_seed(seed)
    inputs = []
    for index, t in enumerate(function.function_type.inputs.data):
        if not isinstance(t, TensorType) or DYNAMIC in t.value_shape():
            raise op_error(function, f"argument {index} is not a tensor of static shape, so "
                                     "--verify-each-pass-numerically cannot draw a random input for it")
        inputs.append(random_tensor(t, generator))
    return inputs


def shards_per_rank(program: FunctionLikeOp, inputs: Sequence[torch.Tensor], world_size: int) -> list[list]:
    types = _tensor_types(program.function_type.inputs.data)
    return [[shard_tensor(x, t, rank) for x, t in zip(inputs, types)] for rank in range(world_size)]


def _tensor_types(types: Sequence[Attribute]) -> list[TensorType]:
    """A function's argument or result types, all tensors where outputs are compared (a
    random input is drawn for tensors only: random_inputs refuses any other)."""
    return [cast(TensorType, t) for t in types]


def run_in_turn(rank: int, world_size: int, runs: Sequence[Run], name: str, number_of_streams: int,
                progress: str) -> None:
    """On every rank: each run in turn, its outputs saved under `progress` before the ranks
    move on together to the next one. On one rank, a failure is saved as its outcome and
    ends the turn; on several, it fails the rank, and the launcher stops the others."""
    for index, run in enumerate(runs):
        try:
            outputs = run_one(rank, world_size, run, name, number_of_streams)
        except RUN_FAILURES as error:
            if world_size > 1:
                raise
            (Path(progress) / f"{index}.failed").write_text(str(error))
            return
        torch.save(outputs, Path(progress) / f"{index}.rank{rank}.pt")
        if world_size > 1:
            dist.barrier()


def run_one(rank: int, world_size: int, run: Run, name: str, number_of_streams: int) -> list:
    if not run.is_program:
        return run_fusion(parse_module(run.text, "<fusion>"), run.inputs[0], name)
    module = parse_module(run.text, f"<IR after {run.label}>")
    evaluator = Evaluator(module, name=name, rank=rank, world_size=world_size, number_of_streams=number_of_streams,
                          device=torch.device("cpu"))
    return evaluator.run(run.inputs[rank])


def completed(progress: Path, runs: Sequence[Run], ranks: int, failure: Failed | None) -> list[Outcome]:
    """The outputs of the runs every rank completed; the failure in place of the next."""
    outcomes: list[Outcome] = []
    for index, run in enumerate(runs):
        failed = progress / f"{index}.failed"
        files = {rank if run.is_program else None: progress / f"{index}.rank{rank}.pt" for rank in range(ranks)}
        if failed.exists():
            outcomes.append(Failed(failed.read_text()))
            break
        if not all(f.exists() for f in files.values()):
            assert failure is not None, "a launch that succeeded left no outputs"
            outcomes.append(failure)
            break
        outcomes.append({rank: torch.load(f, weights_only=True) for rank, f in files.items()})
    return outcomes


def global_outputs(function: FunctionLikeOp, outcome: Outputs) -> list[torch.Tensor]:
    """The unsharded outputs of a reference run."""
    if None in outcome:
        return outcome[None]
    types = _tensor_types(function.function_type.outputs.data)
    return [unshard({rank: outputs[index] for rank, outputs in outcome.items() if rank is not None}, t)
            for index, t in enumerate(types)]


def compare(snapshot: Snapshot, name: str, expected: list[torch.Tensor], outcome: Outputs | Failed,
            passes: Sequence[str]) -> None:
    """Raise at the first output that `passes` (the last one made `snapshot`) changed, or
    at the failure they caused."""
    changed = f"{_passes(passes)} changed"
    if isinstance(outcome, Failed):
        after = "it" if len(passes) == 1 else "them"
        raise HostIRError(f"error: {changed} the outputs of @{name}: after {after} the program fails: "
                          f"{outcome.message}")
    function = function_of(snapshot, name)
    types = _tensor_types(function.function_type.outputs.data)
    if len(types) != len(expected):
        raise op_error(function, f"has {len(types)} outputs after {_passes(passes)} instead of {len(expected)}")
    for index, (t, want) in enumerate(zip(types, expected)):
        for rank, outputs in outcome.items():
            problem = difference(outputs[index], want if rank is None else shard_tensor(want, t, rank))
            if problem:
                on_rank = "" if rank is None else f" on rank {rank}"
                raise op_error(defining_op(function, index),
                               f"defines output {index} of @{name}, which {changed}{on_rank}: {problem}")


def difference(actual: torch.Tensor | None, expected: torch.Tensor | None) -> str | None:
    """What differs between an output and the reference, in one line (None if nothing)."""
    if actual is None and expected is None:
        return None  # a rank outside the output's mesh
    if actual is None or expected is None:
        return "this rank holds no output" if actual is None else "this rank holds an output outside its mesh"
    try:
        torch.testing.assert_close(actual, expected, equal_nan=True)
    except AssertionError as error:
        return "; ".join(line.strip() for line in str(error).splitlines() if line.strip())
    return None


def defining_op(function: FunctionLikeOp, index: int) -> Operation:
    """The op defining output `index` of `function` (the function itself for an argument)."""
    terminator = function.body.block.last_op
    assert terminator is not None  # a verified function ends in its return
    returned = terminator.operands[index]
    return returned.owner if isinstance(returned.owner, Operation) else function
