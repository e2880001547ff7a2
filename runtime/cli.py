"""`hostir-run FILE [--nproc N]`: run a host program (or a fusion, lowered first) on N ranks.

N defaults to the number of devices the program names (its largest mesh or team device id
+ 1). Inputs are global (unsharded) tensors, from `--inputs a.pt b.pt` or drawn from
`--seed`; each rank receives its shard of every input (`runtime.layouts.shard_tensor`).
The outputs are reassembled from every rank's shard and printed (shape, dtype, checksum),
with the max error against the eager reference of the source fusion: the fusion itself
when FILE holds one, else the program's reference (hostir_dialect/symbols.py). An output
that differs from its reference beyond torch's default tolerance for its dtype is an
error (exit 1). Everything that can be checked without running (options, the world size
the meshes need, the inputs) is checked before any rank is spawned. Ranks are spawned
locally, or, when RANK and WORLD_SIZE are set (torchrun), this process is one rank of that
world and rank 0 prints.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import math
import os
import statistics
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import torch
import torch.distributed as dist
from xdsl.dialects.builtin import ModuleOp
from xdsl.utils.exceptions import DiagnosticException, ParseError

from hostir.passes.pipeline import check_seconds
from hostir.passes.specialize_extents import check_fit, dynamic_extents
from hostir_dialect import fusion, hir
from hostir_dialect.context import parse_module
from hostir_dialect.diagnostics import HostIRError, allow_deep_nesting, located_text, op_error, parse_error, read_source
from hostir_dialect.symbols import devices_needed, programs, reference_of
from hostir_dialect.tensor_type import DYNAMIC, TensorType

from .compile import DEFAULT_NUMBER_OF_STREAMS, MAX_NUMBER_OF_STREAMS
from .compile.unit_backends import UNIT_BACKENDS
from .evaluator import Evaluator, ExecutionError, InputError, find_function
from .graphs import EAGER
from .launcher import (
    DEFAULT_MAX_WORLD,
    Job,
    RankResult,
    Reference,
    SpmdError,
    check_backend,
    default_backend,
    lower_module,
    run_jobs,
    run_spmd_batch,
)
from .layouts import random_tensor, shard_tensor, unshard
from .timeline import draw, require_matplotlib
from .trace import HOST_CLOCK_NOTE, Trace, efficiency_note, merge, overlap, write_trace


class UsageError(Exception):
    pass


MAX_EXPANSION_BYTES = 1 << 26
"""How many bytes more than its file stores an --inputs tensor may expand to (64 MiB)."""


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="hostir-run", description=__doc__.split("\n\n")[0])
    parser.add_argument("file", help="a .mlir file with a hir.program or a fusion.func (- for standard input)")
    parser.add_argument("--nproc", type=int,
                        help="number of ranks to spawn (default: the devices the program names)")
    parser.add_argument("--max-world", type=int, default=DEFAULT_MAX_WORLD,
                        help=f"the most CPU ranks to spawn (default {DEFAULT_MAX_WORLD}; on GPUs: one per GPU)")
    source = parser.add_mutually_exclusive_group()
    source.add_argument("--inputs", nargs="+", metavar="PT", help="global input tensors saved with torch.save")
    source.add_argument("--seed", type=int, default=0, help="seed of the random global inputs (default 0)")
    parser.add_argument("--number-of-streams", type=int, default=DEFAULT_NUMBER_OF_STREAMS)
    parser.add_argument("--repeat", type=int, default=1, help="runs per rank; the median time is printed")
    parser.add_argument("--backend", choices=("gloo", "nccl"), help="default: nccl with enough GPUs, else gloo")
    parser.add_argument("--program", help="the hir.program (or fusion.func) to run when FILE has several")
    parser.add_argument("--timeout", type=float, default=300, help="seconds before every rank is stopped")
    parser.add_argument("--collective-timeout", type=float, default=30,
                        help="seconds a rank waits for its peers in one communication before it fails (default 30)")
    parser.add_argument("--cuda-graph", action=argparse.BooleanOptionalAction, default=None,
                        help="capture the program in a CUDA graph on its first run and replay it (default: on GPUs "
                             "wherever the program is capturable; eager on CPU ranks)")
    parser.add_argument("--unit-backend", choices=UNIT_BACKENDS,
                        help="run kernel units as fused kernels (compiled, the default on GPUs) or op by op (eager, the "
                             "default on CPU ranks)")
    parser.add_argument("--trace", metavar="JSON", help="write a Chrome/Perfetto trace of one more run, every rank's")
    parser.add_argument("--report", action="store_true",
                        help="print each rank's communication, compute and wall time of that run and their overlap")
    parser.add_argument("--timeline", metavar="PNG", help="draw that run's timeline (needs matplotlib: hostir[plot])")
    return parser.parse_args(argv)


def check_options(args: argparse.Namespace) -> None:
    """Refuse option values that could only fail (or do nothing) once the ranks run."""
    for option, value in (("--nproc", args.nproc), ("--max-world", args.max_world), ("--repeat", args.repeat),
                          ("--number-of-streams", args.number_of_streams)):
        if value is not None and value < 1:
            raise UsageError(f"{option} must be at least 1, got {value}")
    if args.number_of_streams > MAX_NUMBER_OF_STREAMS:
        raise UsageError(f"--number-of-streams must be at most {MAX_NUMBER_OF_STREAMS}, got {args.number_of_streams}")
    for option, value in (("--timeout", args.timeout), ("--collective-timeout", args.collective_timeout)):
        check_seconds(option, value)
    for option, value in (("--trace", args.trace), ("--timeline", args.timeline)):
        if value is not None:
            check_output_path(option, Path(value))


def check_output_path(option: str, path: Path) -> None:
    """Refuse a file the run could only fail to write once it is over."""
    directory = path.parent
    if not directory.exists():
        raise UsageError(f"{option} {path}: directory {directory} does not exist")
    if not directory.is_dir():
        raise UsageError(f"{option} {path}: {directory} is not a directory")
    if path.is_dir():
        raise UsageError(f"{option} {path} is a directory")
    if not os.access(directory, os.W_OK | os.X_OK):
        raise UsageError(f"{option} {path}: directory {directory} is not writable")


def world_size_for(module: ModuleOp, nproc: int | None, backend: str | None, max_world: int | None) -> int:
    """`--nproc`, else the ranks the program needs; refuses a world too small for it (its
    ranks would hold uninitialised memory where a missing rank's shard belongs), and one
    larger than this machine holds (`max_world` CPU ranks or one rank per GPU; `max_world`
    None: a torchrun world, which torchrun made)."""
    needed, where, op = devices_needed(module)
    world_size = nproc if nproc is not None else max(needed, 1)
    if needed > world_size:
        raise UsageError(f"the program uses {where} ({needed} ranks) but runs on {world_size} (--nproc)")
    if max_world is None:
        return world_size
    backend = backend or default_backend(world_size)
    check_backend(backend, world_size)
    if backend == "gloo" and world_size > max_world:
        problem = f"more than the {max_world} CPU ranks hostir-run spawns (--max-world)"
        if nproc is None:
            assert op is not None, "a world beyond one rank is asked for by a mesh or team of an op"
            raise op_error(op, f"uses {where}, a world of {needed} ranks: {problem}")
        raise UsageError(f"--nproc {nproc} is {problem}")
    return world_size


def load_module(path: str) -> ModuleOp:
    """The module in the file `path`; `-` is standard input, as for hostir-opt."""
    try:
        if path == "-":
            text = read_source(sys.stdin.buffer, "<stdin>")
        else:
            with open(path, "rb") as stream:
                text = read_source(stream, path)
    except OSError as error:
        raise UsageError(f"cannot read {path}: {error.strerror}") from None
    try:
        return parse_module(text, "<stdin>" if path == "-" else path)
    except ParseError as error:
        raise parse_error(error) from None


def host_and_reference(module: ModuleOp, name: str | None) -> tuple[ModuleOp, hir.ProgramOp, fusion.FuncOp | None]:
    """The module to run, its program and the fusion it is checked against (if any)."""
    if not programs(module):
        source = find_function(module, name)
        host = lower_module(module)
        return host, find_function(host, None), source  # type: ignore[return-value]  # lowering makes a hir.program
    program = find_function(module, name)
    if not isinstance(program, hir.ProgramOp):
        raise UsageError(f"@{name} is a fusion.func but the file holds host programs; name a hir.program")
    return module, program, reference_of(module, program)


def global_inputs(program: hir.ProgramOp, paths: Sequence[str] | None, seed: int) -> list[torch.Tensor]:
    types = input_tensor_types(program)
    if paths is not None:
        if len(paths) != len(types):
            raise UsageError(f"@{program.sym_name.data} takes {len(types)} inputs, {len(paths)} files given")
        return [_load(path) for path in paths]
    generator = torch.Generator().manual_seed(seed)
    return [_random(t, generator, index) for index, t in enumerate(types)]


def _load(path: str) -> torch.Tensor:
    try:
        value = torch.load(path, weights_only=True)
    except Exception as error:  # torch raises many kinds; the message is what matters
        raise UsageError(f"cannot load {path}: {error}") from None
    if not isinstance(value, torch.Tensor):
        raise UsageError(f"{path} holds a {type(value).__name__}, not a tensor")
    if value.layout != torch.strided:
        raise UsageError(f"{path} holds a {str(value.layout).removeprefix('torch.')} tensor; hostir-run takes dense "
                         "tensors (save x.to_dense())")
    if value.is_meta:
        raise UsageError(f"{path} holds a meta tensor, which has no values")
    elements, stored = value.numel() * value.element_size(), value.untyped_storage().nbytes()
    if elements > stored + MAX_EXPANSION_BYTES:
        # Every rank would receive its whole shard as dense memory: a 1.6 KB file of
        # torch.zeros(1, 1).expand(2, 10**8) asked for 800 MB on each.
        raise UsageError(f"{path} holds a view of {elements} bytes of elements on {stored} bytes of storage (an "
                         f"expanded tensor); hostir-run expands at most {MAX_EXPANSION_BYTES >> 20} MiB more than "
                         "a file stores (save x.contiguous() to pass it anyway)")
    return value.detach()  # its values are the input; autograd state cannot reach the ranks


def _random(t: TensorType, generator: torch.Generator, index: int) -> torch.Tensor:
    shape = t.value_shape()
    if DYNAMIC in shape:
        raise UsageError(f"argument {index} has a dynamic shape {t}; pass --inputs")
    try:
        return random_tensor(t, generator)
    except RuntimeError as error:  # more memory than the machine has
        raise UsageError(f"cannot draw argument {index} of shape {list(shape)}: {first_line(error)}") from None


def checked_reference(module: ModuleOp, function: fusion.FuncOp | None, inputs: list[torch.Tensor]) -> Reference | None:
    """The reference for rank 0 to compute after the runs, within --timeout (it may take
    longer than the program: a fusion is its whole computation on one process), once the
    inputs are known to fit it."""
    if function is None:
        return None
    Evaluator(module, name=function.sym_name.data).check_inputs(inputs)
    check_extents_fit(function, inputs)
    return Reference(located_text(module), function.sym_name.data, inputs)


def check_extents_fit(function: fusion.FuncOp, inputs: Sequence[torch.Tensor]) -> None:
    """Refuse, before any rank starts, inputs whose dynamic extents the fusion's ops
    cannot take together (where every dynamic extent is one an input shows: not that of a
    reduction axis)."""
    types = [argument.type for argument in function.args]
    if any(isinstance(t, TensorType) and any(a.is_reduction and a.extent == DYNAMIC for a in t.axes) for t in types):
        return
    extents = tuple(e for t, x in zip(types, inputs) if isinstance(t, TensorType) for e in dynamic_extents(t, x.shape))
    if extents:
        try:
            check_fit(function, extents, function.sym_name.data)
        except HostIRError as error:
            raise InputError(str(error)) from None


def input_tensor_types(program: hir.ProgramOp) -> list[TensorType]:
    types = []
    for index, t in enumerate(program.function_type.inputs.data):
        if not isinstance(t, TensorType):
            raise UsageError(f"argument {index} of @{program.sym_name.data} is not a tensor; hostir-run passes tensors only")
        types.append(t)
    return types


def shards_per_rank(program: hir.ProgramOp, inputs: Sequence[torch.Tensor], world_size: int) -> list[list]:
    types = input_tensor_types(program)
    per_rank = []
    for rank in range(world_size):
        try:
            per_rank.append([shard_tensor(x, t, rank) for x, t in zip(inputs, types)])
        except ValueError as error:
            raise UsageError(str(error)) from None
    return per_rank


@dataclass
class Report:
    """What hostir-run prints, and the outputs that differ from their reference."""

    lines: list[str]
    mismatches: list[str]

    @property
    def text(self) -> str:
        return "\n".join(self.lines)


def report(program: hir.ProgramOp, results: Sequence[RankResult], world_size: int) -> Report:
    lines, mismatches = [], []
    reference = results[0].reference
    output_types = list(program.function_type.outputs.data)
    for index, t in enumerate(output_types):
        value = unshard([r.outputs[index] for r in results], t)  # type: ignore[arg-type]  # a program's outputs are tensors
        line = (f"output {index}: shape {list(value.shape)} dtype {str(value.dtype).removeprefix('torch.')} "
                f"checksum {value.double().sum().item():.6g}")
        if reference is not None:
            expected = reference[index]
            if expected.shape != value.shape:
                line += f" reference shape {list(expected.shape)} DIFFERS"
                mismatches.append(f"output {index} has shape {list(value.shape)}, its reference {list(expected.shape)}")
            else:
                value, expected = value.reshape(-1), expected.reshape(-1)  # torch compares at most 64 dimensions
                error = (value.double() - expected.double()).abs().max().item() if value.numel() else 0.0
                line += f" max error vs reference {error:.3g}"
                if not _close(value, expected):
                    mismatches.append(f"output {index} differs from its reference (max error {error:.3g})")
        lines.append(line)
    per_run = [max(r.times[k] for r in results) for k in range(len(results[0].times))]
    lines.append(f"median time: {statistics.median(per_run) * 1e3:.3f} ms over {len(per_run)} run(s) on {world_size} rank(s)")
    if results[0].graph_mode != EAGER:
        lines.append(f"graph mode: {results[0].graph_mode}")
    return Report(lines, mismatches)


def _close(value: torch.Tensor, expected: torch.Tensor) -> bool:
    """Equal within torch.testing's default tolerances for the dtype (exact for integers)."""
    try:
        torch.testing.assert_close(value, expected, check_device=False)
    except AssertionError:
        return False
    return True


def with_trace_outputs(result: Report, args: argparse.Namespace, results: Sequence[RankResult]) -> Report:
    """`result` with the trace file, the timeline picture and the overlap report lines that
    were asked for."""
    traces = [r.trace for r in results if r.trace is not None]
    if not traces:
        return result
    lines = result.lines
    if args.trace:
        write_trace(merge(traces), args.trace)
        lines.append(f"trace: wrote {args.trace}")
    if args.timeline:
        draw(traces, args.timeline)
        lines.append(f"timeline: wrote {args.timeline}")
    if args.report:
        lines += [overlap(trace).line() for trace in traces]
        lines.append(efficiency_note(traces[0].device_clock))
    if not traces[0].device_clock:
        lines.append(f"trace: {HOST_CLOCK_NOTE}")
    return result


def run(args: argparse.Namespace) -> Report | None:
    check_options(args)
    if args.timeline:
        require_matplotlib()
    module = load_module(args.file)
    joined = "RANK" in os.environ and "WORLD_SIZE" in os.environ
    world_size = world_size_for(module, int(os.environ["WORLD_SIZE"]) if joined else args.nproc, args.backend,
                                None if joined else args.max_world)
    host, program, reference_func = host_and_reference(module, args.program)
    inputs = global_inputs(program, args.inputs, args.seed)
    reference = checked_reference(module, reference_func, inputs)
    job = Job(located_text(host), shards_per_rank(program, inputs, world_size), name=program.sym_name.data,
              number_of_streams=args.number_of_streams, repeat=args.repeat, cuda_graph=args.cuda_graph,
              unit_backend=args.unit_backend,
              trace=bool(args.trace or args.report or args.timeline), reference=reference)
    if not joined:
        results = run_spmd_batch([job], world_size, backend=args.backend, timeout=args.timeout,
                                 collective_timeout=args.collective_timeout, max_world=args.max_world)[0]
        return with_trace_outputs(report(program, results, world_size), args, results)
    # One rank of a torchrun world: run here, collect every rank's result on rank 0.
    if not dist.is_initialized():
        dist.init_process_group(args.backend or ("nccl" if torch.cuda.is_available() else "gloo"))
    (mine,) = run_jobs(dist.get_rank(), world_size, [job])
    gathered = gather_results(mine)
    if dist.get_rank() != 0:
        return None
    return with_trace_outputs(report(program, gathered, world_size), args, gathered)


def gather_results(mine: RankResult) -> list[RankResult]:
    """Every rank's result, on every rank of the world (rank 0 prints them). A result
    crosses as data, never as a pickle: a JSON header and the raw bytes of its outputs."""
    results = [_decode(encoded) for encoded in all_gather_bytes(_encode(mine))]
    results[dist.get_rank()] = mine  # with what stays on this rank (the reference)
    return results


def all_gather_json(value) -> list:
    """Every rank's `value`, which JSON can encode, on every rank (dist.all_gather_object
    needs numpy, and unpickles what its peers send)."""
    encoded = torch.frombuffer(bytearray(json.dumps(value).encode()), dtype=torch.uint8)
    return [json.loads(bytes(chunk.tolist())) for chunk in all_gather_bytes(encoded)]


def all_gather_bytes(data: torch.Tensor) -> list[torch.Tensor]:
    """Every rank's 1-D uint8 tensor `data`, of any length, on every rank (on CPU)."""
    device = torch.device("cuda", torch.cuda.current_device()) if dist.get_backend() == "nccl" else torch.device("cpu")
    sizes = [torch.zeros(1, dtype=torch.int64, device=device) for _ in range(dist.get_world_size())]
    dist.all_gather(sizes, torch.tensor([data.numel()], device=device))
    padded = torch.zeros(max(int(s.item()) for s in sizes), dtype=torch.uint8, device=device)
    padded[: data.numel()] = data.to(device)
    chunks = [torch.empty_like(padded) for _ in sizes]
    dist.all_gather(chunks, padded)
    return [chunk[: int(size.item())].cpu() for chunk, size in zip(chunks, sizes)]


def _encode(result: RankResult) -> torch.Tensor:
    outputs = [None if x is None else {"dtype": str(x.dtype).removeprefix("torch."), "shape": list(x.shape)}
               for x in result.outputs]
    header = json.dumps({"outputs": outputs, "times": result.times, "stream_log": result.stream_log,
                         "graph_mode": result.graph_mode,
                         "trace": dataclasses.asdict(result.trace) if result.trace else None}).encode()
    length = torch.tensor([len(header)], dtype=torch.int64).view(torch.uint8)
    data = [x.contiguous().reshape(-1).view(torch.uint8) for x in result.outputs if x is not None]
    return torch.cat([length, torch.frombuffer(bytearray(header), dtype=torch.uint8), *data])


def _decode(encoded: torch.Tensor) -> RankResult:
    length = int(encoded[:8].clone().view(torch.int64).item())
    header = json.loads(bytes(encoded[8: 8 + length].tolist()))
    offset = 8 + length
    outputs: list[torch.Tensor | None] = []
    for meta in header["outputs"]:
        if meta is None:
            outputs.append(None)
            continue
        dtype = getattr(torch, meta["dtype"])
        if not isinstance(dtype, torch.dtype):
            raise ValueError(f"a rank sent an output of dtype {meta['dtype']!r}")
        size = math.prod(meta["shape"]) * dtype.itemsize
        outputs.append(encoded[offset: offset + size].clone().view(dtype).reshape(meta["shape"]))
        offset += size
    stream_log = header["stream_log"] and [tuple(entry) for entry in header["stream_log"]]
    trace = Trace(**header["trace"]) if header["trace"] else None
    return RankResult(outputs, header["times"], stream_log, header["graph_mode"], trace)


def console_main(argv: Sequence[str] | None = None) -> None:
    args = parse_args(argv)
    allow_deep_nesting()
    try:
        result = run(args)
    except (UsageError, SpmdError, ExecutionError, ValueError) as error:
        _fail(str(error))
    except DiagnosticException as error:
        _fail(str(error), prefixed=True)
    if result is None:
        return
    print(result.text, flush=True)
    if result.mismatches:
        _fail(result.mismatches[0])


def first_line(error: BaseException) -> str:
    return str(error).strip().splitlines()[0] if str(error).strip() else type(error).__name__


def _fail(message: str, prefixed: bool = False) -> None:
    message = message.strip().splitlines()[0]  # one line: located diagnostics carry source context
    print(message if prefixed and "error:" in message else f"hostir-run: error: {message}", file=sys.stderr)
    sys.exit(1)


if __name__ == "__main__":  # python -m hostir.runtime.cli; the ranks it spawns import it under another name
    console_main()
