"""The `hir` dialect: the host program one rank runs. Buffer semantics, side effects.

Every op that touches buffers, streams or the network declares a memory effect, so
xDSL's dead-code elimination never removes it; only the value-producing queries
(`hir.stream`, `hir.number_of_streams`, `hir.extent`, `hir.team_position`,
`hir.alias_select`) are pure.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import ClassVar

from xdsl.dialects import scf
from xdsl.dialects.builtin import (
    I64,
    FlatSymbolRefAttr,
    IndexType,
    IntegerAttr,
    UnitAttr,
)
from xdsl.dialects.utils.enum_attribute import EnumAttribute
from xdsl.ir import (
    Attribute,
    BlockArgument,
    Data,
    Dialect,
    Operation,
    OpResult,
    ParametrizedAttribute,
    SpacedOpaqueSyntaxAttribute,
    SSAValue,
    TypeAttribute,
)
from xdsl.irdl import (
    AttrSizedOperandSegments,
    IRDLOperation,
    irdl_attr_definition,
    operand_def,
    opt_operand_def,
    opt_prop_def,
    prop_def,
    result_def,
    traits_def,
    var_operand_def,
    var_result_def,
)
from xdsl.parser import AttrParser
from xdsl.printer import Printer
from xdsl.traits import (
    HasParent,
    IsTerminator,
    MemoryAllocEffect,
    MemoryFreeEffect,
    MemoryWriteEffect,
    OpTrait,
    Pure,
)
from xdsl.utils.exceptions import VerifyException
from xdsl.utils.str_enum import StrEnum

from .attributes import INDEX, i64_attr
from .building import init_flat, init_segmented
from .copy_engine_facts import CopyEngineAlgorithm, copy_engine_algorithm
from .definition import op_definition
from .functions import FunctionLikeOp, ReturnLikeOp, lookup_function
from .fusion import ComputeOp, FuncOp, ReduceKind, ReduceKindAttr
from .parsing import next_token
from .tensor_type import DEVICE_KINDS, DYNAMIC, Mesh, ParallelKind, TensorType, is_floating_point, parse_mesh, tensor_type

# --------------------------------------------------------------------------- #
# Types and enums
# --------------------------------------------------------------------------- #


@irdl_attr_definition
class StreamType(ParametrizedAttribute, TypeAttribute):
    """A CUDA stream (a bookkeeping token on CPU)."""

    name = "hir.stream"


@irdl_attr_definition
class WorkType(ParametrizedAttribute, TypeAttribute):
    """The handle of a posted collective, consumed by hir.wait."""

    name = "hir.work"


class Transport(StrEnum):
    """How a communication moves data (docs/copy_engine.md)."""

    NCCL = "nccl"
    """The world's collective library: NCCL on GPUs, gloo on CPU ranks."""
    COPY_ENGINE = "copy_engine"
    """Copies into the other members' symmetric buffers (the copy engines on GPUs, no SM),
    and flags set in their memory in stream order."""


@irdl_attr_definition
class TransportAttr(EnumAttribute[Transport], SpacedOpaqueSyntaxAttribute):
    """`transport nccl|copy_engine` on a communication; nccl, the default, is not printed."""

    name = "hir.transport"


@dataclass(frozen=True)
class Team:
    """The devices a collective runs among: the devices of a list (`[0, 1, 2]`, in team
    order), or, `along` a device type of a 2-D mesh, each device's slice of the mesh
    (`[[0, 1], [2, 3]] along didx`: its mesh row; `along didy`: its column), as MLIR
    shard's grid axes: one op, the same text on every rank, whose team each rank resolves
    to its own, so a program does not grow with the number of rows or columns."""

    mesh: Mesh
    along: ParallelKind | None = None

    @staticmethod
    def of(members: Sequence[int]) -> Team:
        """The team of these devices, in this order."""
        return Team(Mesh.of(list(members)))

    @property
    def devices(self) -> tuple[int, ...]:
        """Every device that takes part, in one team or another."""
        return self.mesh.devices

    @property
    def size(self) -> int:
        """The members of each team."""
        return self.mesh.size if self.along is None else self.mesh.axis_size(self.along)

    def members(self, device: int) -> tuple[int, ...] | None:
        """The team `device` is in, in team order (None: it takes no part)."""
        return self._teams.get(device)

    def teams(self) -> list[tuple[int, ...]]:
        """Every team once, in mesh order."""
        return list(dict.fromkeys(self._teams.values()))

    def position_of(self, device: int) -> int:
        """`device`'s position in its team; -1 outside."""
        if device not in self.mesh:
            return -1
        return self.mesh.index_along(device, self.along or ParallelKind.DIDX)

    @functools.cached_property
    def _teams(self) -> dict[int, tuple[int, ...]]:
        """Each device's team (one tuple per team, shared by its members)."""
        if self.along is None:
            return dict.fromkeys(self.mesh.devices, self.mesh.devices)
        teams: dict[int, tuple[int, ...]] = {}
        for device in self.mesh.devices:
            if device not in teams:
                team = self.mesh.slice(device, self.along)
                teams.update(dict.fromkeys(team, team))
        return teams

    def problem(self) -> str | None:
        """Why this is no team (None if it is one)."""
        devices = self.mesh.devices
        if not devices:
            return "team must not be empty"
        if any(d < 0 for d in devices):
            return f"team {self} names a negative device id"
        if self.mesh.has_duplicates:
            return f"team {self} repeats a device"
        if self.mesh.ndim > 1 and self.along is None:
            return (f"team {self} is a {self.mesh.ndim}-D mesh: say which of its slices a team is "
                    "(`along didx`, `along didy` or `along didz`)")
        if self.mesh.ndim == 1 and self.along is not None:
            return f"team {self} slices a 1-D mesh"
        if self.along is not None and self.mesh.axis_of(self.along) is None:
            return f"team {self} slices along {self.along}, which the mesh has no axis for"
        return None

    def __str__(self) -> str:
        return str(self.mesh) + (f" along {self.along}" if self.along is not None else "")

    def __getstate__(self) -> dict:
        """Pickled without the table it worked out."""
        return {"mesh": self.mesh, "along": self.along}


@irdl_attr_definition
class TeamAttr(Data[Team], SpacedOpaqueSyntaxAttribute):
    """`team [0, 1]`, `team [[0, 1], [2, 3]] along didx` on an op (see `Team`); a mesh's
    text, so a team of any size prints short (`team [0, ..., 511]`)."""

    name = "hir.team"

    @classmethod
    def parse_parameter(cls, parser: AttrParser) -> Team:
        mesh = parse_mesh(parser)
        if parser.parse_optional_keyword("along") is None:
            return Team(mesh)
        span = next_token(parser).span
        along = parser.parse_str_enum(ParallelKind)
        if along not in DEVICE_KINDS:
            parser.raise_error(f"a team is a slice along didx or didy, not {along}", span)
        return Team(mesh, along)

    def print_parameter(self, printer: Printer) -> None:
        printer.print_string(str(self.data))

    @staticmethod
    def of(team: Team | Sequence[int]) -> TeamAttr:
        return TeamAttr(team if isinstance(team, Team) else Team.of(team))


class InHostProgram(OpTrait):
    """A host op: it belongs in a hir.program, never in a fusion.func (whose body is
    what a kernel computes)."""

    def verify(self, op: Operation) -> None:
        parent = op.parent_op()
        while parent is not None:
            if isinstance(parent, FuncOp):
                raise VerifyException("is not allowed in a fusion.func; host ops belong in a hir.program")
            parent = parent.parent_op()


class HostOp(IRDLOperation):
    """Base of the ops a host program runs."""

    traits = traits_def(InHostProgram())


# --------------------------------------------------------------------------- #
# Program
# --------------------------------------------------------------------------- #


@op_definition
class ProgramOp(FunctionLikeOp):
    """hir.program @main(%a: T) -> R { ... hir.return %r : R }: one rank's host program.

    The same text runs on every rank: its arguments and results are that rank's local
    shards (None outside a tensor's mesh), and an op whose team or mesh leaves the rank
    out is skipped there.
    """

    name = "hir.program"
    RETURN_OP: ClassVar[str] = "hir.return"


@op_definition
class ReturnOp(ReturnLikeOp):
    """hir.return %r : R"""

    name = "hir.return"
    traits = traits_def(IsTerminator(), HasParent(ProgramOp))


# --------------------------------------------------------------------------- #
# Memory
# --------------------------------------------------------------------------- #


@op_definition
class AllocateOp(HostOp):
    """%b = hir.allocate (symmetric)? (%n, ..)? : T   -- the local buffer of T.

    A no-op when %b is already bound; on a rank outside T's mesh, no buffer at all.
    `symmetric`: allocated alike on every device of T's mesh, each of which can address
    the others' instances (the buffers of copy-engine collectives). It is created once,
    when the program is compiled, and reused by every run; allocating it acquires it:
    the current stream waits until every other member released its instance of the
    previous run (`hir.deallocate` releases), so no rank writes into a buffer a peer
    still reads.
    `(%n, ..)`: the logical extents of T's dynamic value axes, in order (as
    `memref.alloc`'s dynamic sizes), read at run time (`hir.extent` of an input); without
    them a buffer whose local shape is dynamic cannot be allocated.
    """

    name = "hir.allocate"
    symmetric = opt_prop_def(UnitAttr)
    extents = var_operand_def(IndexType)
    result = result_def(TensorType)
    traits = traits_def(MemoryAllocEffect())
    assembly_format = "(`symmetric` $symmetric^)? (`(` $extents^ `)`)? attr-dict `:` type($result)"

    def __init__(self, tensor_type: TensorType, symmetric: bool = False, extents: Sequence[SSAValue] = ()):
        init_flat(self, extents, [tensor_type], {"symmetric": UnitAttr()} if symmetric else {})

    @property
    def is_symmetric(self) -> bool:
        return self.symmetric is not None

    def verify_(self) -> None:
        t = tensor_type(self.result)
        if self.is_symmetric and t.mesh is None:
            raise VerifyException("a symmetric buffer needs a device mesh: the devices that allocate it")
        if self.is_symmetric and _in_loop(self):
            raise VerifyException(
                "a symmetric buffer cannot be allocated in a loop: it is created once and acquired from the peers, "
                "so every iteration would reuse the memory that earlier iterations may still read on other streams; "
                "allocate one slice per iteration before the loop")
        dynamic = len(t.dynamic_value_axes())
        if self.extents and len(self.extents) != dynamic:
            raise VerifyException(f"{len(self.extents)} extents given for {dynamic} dynamic value axes")


def _in_loop(op: Operation) -> bool:
    parent = op.parent_op()
    while parent is not None and not isinstance(parent, ProgramOp):
        if isinstance(parent, scf.ForOp):
            return True
        parent = parent.parent_op()
    return False


class HostEffectOp(HostOp):
    """An op of one operand and no result, there for its effect (a write effect at
    least, so dead-code elimination never removes it)."""

    traits = traits_def(MemoryWriteEffect())

    def __init__(self, operand: SSAValue):
        init_flat(self, [operand])


@op_definition
class DeallocateOp(HostEffectOp):
    """hir.deallocate %b : T   -- drop this rank's reference to the buffer."""

    name = "hir.deallocate"
    buffer = operand_def(TensorType)
    traits = traits_def(MemoryFreeEffect())
    assembly_format = "$buffer attr-dict `:` type($buffer)"

    def freed_values(self) -> list[SSAValue]:
        """The buffer and the results of ops that wrote into it, transitively: every
        value that refers to the memory this op gives back."""
        found, pending = [], [self.buffer]
        while pending:
            value = pending.pop()
            found.append(value)
            for use in value.uses:
                user = use.operation
                if isinstance(user, ComputeOp) and user.out is value:
                    pending.append(user.result)
                elif isinstance(user, PostOnStreamOp) and use.index >= len(user.inputs):
                    pending.append(user.outputs[use.index - len(user.inputs)])
        return found


class TensorAxisOp(HostOp):
    """An op about one logical axis `axis` of its first operand, the tensor `input`
    (declared by each op: IRDL orders a subclass's operands before its base's)."""

    axis = prop_def(IntegerAttr[I64])

    @property
    def axis_index(self) -> int:
        return self.axis.value.data

    def verify_(self) -> None:
        rank = tensor_type(self.operands[0]).rank  # `input`, declared by each subclass
        if not 0 <= self.axis_index < rank:
            raise VerifyException(f"axis {self.axis_index} is out of range for rank {rank}")


class AliasViewOp(TensorAxisOp):
    """A view of part `index` of `input` along its logical axis `axis`, never a copy:
    the passes and the runtime follow chains of them to the buffer they view."""

    input = operand_def(TensorType)
    index = operand_def(IndexType)
    result = result_def(TensorType)
    traits = traits_def(Pure())

    def verify_(self) -> None:
        super().verify_()
        source, result = tensor_type(self.input), tensor_type(self.result)
        if source.axes[self.axis_index].is_reduction:
            raise VerifyException(f"axis {self.axis_index} is a reduction axis, which has no storage to take a view of")
        if result.element_type != source.element_type:
            raise VerifyException("a view keeps the element type of its input")


@op_definition
class AliasSelectOp(AliasViewOp):
    """%v = hir.alias_select %t[%i] axis 0 : T -> R   -- a view of one slice, never a copy.

    `axis` is a logical axis of T; on a broadcast axis the index is taken as 0. On an
    axis sharded across the devices of a 1-D mesh, each rank holds one slice, its own:
    the index must be `hir.team_position` of that mesh (the view of the rank's shard).
    """

    name = "hir.alias_select"
    assembly_format = "$input `[` $index `]` `axis` $axis attr-dict `:` type($input) `->` type($result)"

    def __init__(self, input: SSAValue, index: SSAValue, axis: int, result_type: TensorType):
        init_flat(self, [input, index], [result_type], {"axis": i64_attr(axis)})

    def verify_(self) -> None:
        super().verify_()
        source, result = tensor_type(self.input), tensor_type(self.result)
        if problem := self.sharded_axis_problem(source):
            raise VerifyException(f"selects on axis {self.axis_index}, which is sharded across devices: {problem}")
        expected = [a.extent for i, a in enumerate(source.axes) if i != self.axis_index]
        if [a.extent for a in result.axes] != expected:
            raise VerifyException(f"result extents {[a.extent for a in result.axes]} must be the input's without axis {self.axis_index}: {expected}")

    def selects_own_shard(self) -> bool:
        """Does it select this rank's own slice of an axis sharded across devices?"""
        return any(p.parallel.is_device for p in tensor_type(self.input).axes[self.axis_index].pieces)

    def sharded_axis_problem(self, source: TensorType) -> str | None:
        """Why a selection on a device-sharded axis is not of the rank's own shard."""
        if not self.selects_own_shard():
            return None
        axis, position = source.axes[self.axis_index], self.index.owner
        if axis.is_split or source.mesh is None or source.mesh.ndim != 1:
            return "only an unsplit axis of a 1-D mesh has one slice per device"
        if not isinstance(position, TeamPositionOp) or position.teams != Team(source.mesh):
            return f"only this rank's own slice, at `hir.team_position team {list(source.mesh.devices)}`"
        return None


@op_definition
class AliasChunkOp(AliasViewOp):
    """%v = hir.alias_chunk %t[%i] axis 0 parts 3 : T -> R   -- a view of chunk i of
    `parts` equal contiguous chunks along a logical axis, which the view keeps (narrowed
    to extent/parts): the chunks of the outer Stream piece of a split axis
    (nvFuser's `outer_split(axis, parts)` then `parallelize(Stream)` on the outer piece).

    Not of an axis sharded across devices outermost (each device holds a block of it); of
    one that devices share inside an outer piece `parts` divides (`(S stream, D didx, m)`),
    each device's chunk is the same block of its part. At run time the axis's extent must
    be a multiple of `parts`, as the split says.
    """

    name = "hir.alias_chunk"
    parts = prop_def(IntegerAttr[I64])
    assembly_format = ("$input `[` $index `]` `axis` $axis `parts` $parts attr-dict `:` type($input) `->` "
                       "type($result)")

    def __init__(self, input: SSAValue, index: SSAValue, axis: int, parts: int, result_type: TensorType):
        init_flat(self, [input, index], [result_type], {"axis": i64_attr(axis), "parts": i64_attr(parts)})

    @property
    def part_count(self) -> int:
        return self.parts.value.data

    def verify_(self) -> None:
        super().verify_()
        source, result = tensor_type(self.input), tensor_type(self.result)
        chosen = source.axes[self.axis_index]
        if self.part_count < 1:
            raise VerifyException(f"takes a chunk of {self.part_count} parts; there must be at least one")
        if problem := chosen.narrowing_problem(self.part_count):
            raise VerifyException(f"takes chunks of axis {self.axis_index}, which {problem}")
        if chosen.extent != DYNAMIC and chosen.extent % self.part_count:
            raise VerifyException(f"axis {self.axis_index} of extent {chosen.extent} is not {self.part_count} equal parts")
        narrowed = chosen.narrowed(self.part_count).extent
        expected = [narrowed if i == self.axis_index else a.extent for i, a in enumerate(source.axes)]
        if [a.extent for a in result.axes] != expected or result.rank != source.rank:
            raise VerifyException(f"result extents {[a.extent for a in result.axes]} must be the input's with axis "
                                  f"{self.axis_index} in {self.part_count} parts: {expected}")


@op_definition
class AliasAsOp(HostOp):
    """%v = hir.alias_as %t : T -> U   -- the buffer of `t` seen as a value of type U, never
    a copy: the same elements on every rank, densely in logical order in both (an
    all-reduce's output seen as the partial sums it reduces, so that their producer writes
    into it and NCCL reduces in place: allreduce-in-place). The passes and the runtime
    follow it to the buffer it views, as the other views."""

    name = "hir.alias_as"
    input = operand_def(TensorType)
    result = result_def(TensorType)
    traits = traits_def(Pure())
    assembly_format = "$input attr-dict `:` type($input) `->` type($result)"

    def __init__(self, input: SSAValue, result_type: TensorType):
        init_flat(self, [input], [result_type])

    def verify_(self) -> None:
        if problem := alias_as_problem(tensor_type(self.input), tensor_type(self.result)):
            raise VerifyException(problem)


def alias_as_problem(source: TensorType, result: TensorType) -> str | None:
    """Why a buffer of type `source` cannot be seen as a value of type `result` (None if it can)."""
    if result.element_type != source.element_type:
        return "a view keeps the element type of its input"
    if source.mesh is None or source.mesh != result.mesh:
        return "views a buffer of a mesh as a value of the same mesh"
    for t in (source, result):
        if t.stream_allocated or t.allocation_order() != tuple(range(t.rank)):
            return f"views only buffers laid out whole in logical order, not {t}"
    held, seen = _member_numel(source), _member_numel(result)
    if held is None or seen is None:
        return "views only buffers of static local shapes"
    if held != seen:
        return f"a rank's buffer of {held} elements cannot be seen as one of {seen}"
    return None


VIEW_OPS = (AliasViewOp, AliasAsOp)
"""The ops whose result is a view of their `input`'s buffer."""


class IndexValueOp(HostOp):
    """A pure op whose one result is an index."""

    result = result_def(IndexType)
    traits = traits_def(Pure())

    def __init__(self, *operands: SSAValue, properties: dict[str, Attribute] | None = None):
        init_flat(self, operands, [INDEX], properties)


@op_definition
class ExtentOp(TensorAxisOp, IndexValueOp):
    """%n = hir.extent %t axis 0 : T   -- the run-time extent of a (dynamic) logical axis."""

    name = "hir.extent"
    input = operand_def(TensorType)
    assembly_format = "$input `axis` $axis attr-dict `:` type($input)"

    def __init__(self, input: SSAValue, axis: int):
        super().__init__(input, properties={"axis": i64_attr(axis)})


# --------------------------------------------------------------------------- #
# Streams
# --------------------------------------------------------------------------- #


class StreamValueOp(HostOp):
    """An op whose one result is a stream; built from its operands."""

    result = result_def(StreamType)

    def __init__(self, *operands: SSAValue):
        init_flat(self, operands, [StreamType()])


@op_definition
class GetCurrentStreamOp(StreamValueOp):
    """%s = hir.get_current_stream   -- capture the stream the user launched us on.

    A write effect keeps it in place between stream switches (and never removed).
    """

    name = "hir.get_current_stream"
    traits = traits_def(MemoryWriteEffect())
    assembly_format = "attr-dict"


@op_definition
class StreamOp(StreamValueOp):
    """%s = hir.stream %key   -- the worker stream for an integer key, created once, cached."""

    name = "hir.stream"
    key = operand_def(IndexType)
    traits = traits_def(Pure())
    assembly_format = "$key attr-dict"


class StreamEffectOp(HostEffectOp):
    """`hir.<op> %s` of a stream %s."""

    stream = operand_def(StreamType)
    assembly_format = "$stream attr-dict"


@op_definition
class SetCurrentStreamOp(StreamEffectOp):
    """hir.set_current_stream %s   -- later device work is enqueued on %s."""

    name = "hir.set_current_stream"


@op_definition
class SynchronizeOp(StreamEffectOp):
    """hir.synchronize %s   -- the current stream waits for %s; the host never blocks."""

    name = "hir.synchronize"


@op_definition
class NumberOfStreamsOp(IndexValueOp):
    """%n = hir.number_of_streams   -- a run parameter (default 4)."""

    name = "hir.number_of_streams"
    assembly_format = "attr-dict"


# --------------------------------------------------------------------------- #
# Kernels
# --------------------------------------------------------------------------- #


@op_definition
class PostOnStreamOp(HostOp):
    """%r = hir.post_on_stream @unit(%a) (outs(%buf))? : (T) -> R

    Runs the `fusion.func @unit` on the current stream, into the `outs` buffers when
    given (all of them or none), into fresh buffers otherwise.
    """

    name = "hir.post_on_stream"
    callee = prop_def(FlatSymbolRefAttr)
    inputs = var_operand_def(TensorType)
    outs = var_operand_def(TensorType)
    outputs = var_result_def(TensorType)
    irdl_options = (AttrSizedOperandSegments(as_property=True),)
    traits = traits_def(MemoryWriteEffect())
    assembly_format = (
        "$callee `(` $inputs `)` (`outs` `(` $outs^ `:` type($outs) `)`)? attr-dict `:` "
        "functional-type($inputs, $outputs)"
    )

    def __init__(self, callee: str, inputs: Sequence[SSAValue], result_types: Sequence[TensorType], outs: Sequence[SSAValue] = ()):
        init_segmented(self, [inputs, outs], result_types, {"callee": FlatSymbolRefAttr(callee)})

    def callee_name(self) -> str:
        return self.callee.root_reference.data

    def unit(self) -> FuncOp:
        found = lookup_function(self, self.callee_name())
        if not isinstance(found, FuncOp):
            raise VerifyException(f"@{self.callee_name()} is not a fusion.func in this module")
        return found

    def verify_(self) -> None:
        signature = self.unit().function_type
        given = tuple(v.type for v in self.inputs)
        if given != signature.inputs.data:
            raise VerifyException(f"inputs do not match @{self.callee_name()}'s signature: {len(given)} given, {len(signature.inputs)} expected" if len(given) != len(signature.inputs) else f"input types do not match @{self.callee_name()}'s signature")
        if tuple(self.outputs.types) != signature.outputs.data:
            raise VerifyException(f"results do not match @{self.callee_name()}'s signature")
        if self.outs and tuple(v.type for v in self.outs) != signature.outputs.data:
            raise VerifyException("outs must be given for all results or none, with the result types")


# --------------------------------------------------------------------------- #
# Communication
# --------------------------------------------------------------------------- #


class WaitedOp(HostOp):
    """An op that posts work (a collective, a send or a receive): its `work` token must
    be waited whole, or its buffers could be read or reused before the data has moved
    (waiting `from` a member waits for that member's part only, not for the transfers
    this rank posted, which read its input)."""

    def verify_work_is_waited(self) -> None:
        work = self.results[0]
        if not waited_whole(work):
            name = f"%{work.name_hint}" if work.name_hint else "its work token"
            waited = "waited whole" if any(isinstance(use.operation, WaitOp) for use in work.uses) else "waited"
            raise VerifyException(f"work token {name} is never {waited} (hir.wait {name})")


def waited_whole(work: SSAValue, carried: frozenset[SSAValue] = frozenset()) -> bool:
    """Does a `hir.wait` without `from` wait for `work`, directly or through the `scf.for`
    loops that carry it on (a work token waited one iteration later, in order-chunk-compute's
    skewed loops)? A carried work is waited where both the next iteration (the body's
    argument) and the loop's result are."""
    for use in work.uses:
        if isinstance(use.operation, WaitOp) and use.operation.member is None:
            return True
        loop, position = _carrying_loop(use.operation, use.index)
        if loop is None or work in carried:
            continue
        inside, after = loop.body.block.args[position + 1], loop.res[position]
        if waited_whole(inside, carried | {work}) and waited_whole(after, carried | {work}):
            return True
    return False


def _carrying_loop(op: Operation, index: int) -> tuple[scf.ForOp | None, int]:
    """The loop that carries operand `index` of `op` on, and its iteration argument's position."""
    if isinstance(op, scf.ForOp) and index >= 3:  # lb, ub, step, then the initial values
        return op, index - 3
    if isinstance(op, scf.YieldOp) and isinstance(loop := op.parent_op(), scf.ForOp):
        return loop, index
    return None, 0


def posting_op(work: SSAValue) -> Operation:
    """The op that posted `work`, followed back through the loops that carry it (a loop's
    body argument or result holds what its body yields)."""
    while True:
        if isinstance(work, OpResult) and isinstance(work.op, scf.ForOp):
            work = work.op.body.block.last_op.operands[work.index]  # type: ignore[union-attr]  # a body ends in its yield
        elif isinstance(work, BlockArgument) and isinstance(loop := work.block.parent_op(), scf.ForOp) and work.index:
            work = loop.body.block.last_op.operands[work.index - 1]  # type: ignore[union-attr]
        else:
            assert isinstance(work, OpResult)  # a !hir.work is a result of the op that posted it
            return work.op


class CollectiveOp(WaitedOp):
    """%w = hir.<collective> %in -> %out (via %r)? team [0, 1] (root 0)? (op sum)?
              (transport copy_engine)? : T -> R (, V)?

    The team is a list of devices, or each rank's slice of a 2-D mesh (`team [[0, 1],
    [2, 3]] along didx`: the rank's row; see `Team`). `root` is a device of a listed team,
    and on a sliced one a position, the same in every team (`root 0`: each row's first).

    With `transport copy_engine` (all-gather, reduce-scatter and all-reduce only;
    docs/copy_engine.md), the output of an all-gather is a view of a symmetric buffer, and
    reduce-scatter and all-reduce receive the other members' contributions in `via`, a
    view of a symmetric buffer with one slot per member.

    The verifier checks what the runtime's contract (runtime/communicator.py) needs of
    each member: the buffers it must hold (`members_problem`) and their element counts
    (`size_problem`, on one member's local buffers).
    """

    input = operand_def(TensorType)
    output = operand_def(TensorType)
    via = opt_operand_def(TensorType)
    team = prop_def(TeamAttr)
    root = opt_prop_def(IntegerAttr[I64])
    reduction = opt_prop_def(ReduceKindAttr)
    transport = prop_def(TransportAttr, default_value=TransportAttr(Transport.NCCL))
    work = result_def(WorkType)
    irdl_options = (AttrSizedOperandSegments(as_property=True),)
    traits = traits_def(MemoryWriteEffect())
    assembly_format = (
        "$input `->` $output (`via` $via^)? `team` $team (`root` $root^)? (`op` $reduction^)? "
        "(`transport` $transport^)? attr-dict `:` type($input) `->` type($output) (`,` type($via)^)?"
    )
    HAS_ROOT: ClassVar[bool] = False
    REDUCES: ClassVar[bool] = False
    EVERY_MEMBER_HOLDS_BOTH: ClassVar[bool] = True
    """Every member sends its input and receives into its output."""
    ROOT_SENDS: ClassVar[bool] = False
    """The root's input is what the others receive."""

    def __init__(
        self, input: SSAValue, output: SSAValue, team: Team | Sequence[int], *,
        root: int | None = None, reduction: ReduceKind | None = None,
        transport: Transport = Transport.NCCL, via: SSAValue | None = None,
    ):
        init_segmented(self, [input, output, via], [WorkType()], collective_properties(team, root, reduction, transport))

    @property
    def uses_copy_engine(self) -> bool:
        return self.transport.data == Transport.COPY_ENGINE

    @property
    def teams(self) -> Team:
        """Who takes part: one team, or one per slice of a mesh."""
        return self.team.data

    def team_of(self, rank: int) -> tuple[int, ...] | None:
        """The members of `rank`'s team, in team order (None: it takes no part)."""
        return self.teams.members(rank)

    @property
    def team_size(self) -> int:
        return self.teams.size

    @property
    def root_id(self) -> int | None:
        """The root as written: a device, or on a sliced team a position (`root_of`)."""
        return self.root.value.data if self.root is not None else None

    def root_of(self, rank: int) -> int | None:
        """The device that is the root of `rank`'s team."""
        if self.root_id is None or self.teams.along is None:
            return self.root_id
        team = self.team_of(rank)
        return team[self.root_id] if team is not None else None

    def takes_part(self, rank: int) -> bool:
        """Does `rank` post this collective? A rank outside the team skips it."""
        return rank in self.teams.mesh

    def needs_input(self, member: int) -> bool:
        """Must team member `member` hold an input buffer? One that must and does not
        cannot post (runtime/communicator.py); where it need not, it posts scratch."""
        return True

    def needs_output(self, member: int) -> bool:
        """Must team member `member` hold an output buffer? (See `needs_input`.)"""
        return True

    def verify_(self) -> None:
        teams = self.teams
        if problem := teams.problem():
            raise VerifyException(problem)
        if self.HAS_ROOT != (self.root is not None):
            raise VerifyException(f"{self.name} {'needs' if self.HAS_ROOT else 'takes no'} root")
        if self.root_id is not None and teams.along is None and self.root_id not in teams.mesh:
            raise VerifyException(f"root {self.root_id} is not in team {teams}")
        if self.root_id is not None and teams.along is not None and not 0 <= self.root_id < teams.size:
            raise VerifyException(f"root {self.root_id} is not a position in the teams of {teams.size} of team {teams}")
        if self.REDUCES != (self.reduction is not None):
            raise VerifyException(f"{self.name} {'needs a reduction kind (op ...)' if self.REDUCES else 'takes no reduction kind'}")
        self.verify_buffers()
        self.verify_transport()
        self.verify_work_is_waited()

    def verify_buffers(self) -> None:
        source, dest = tensor_type(self.input), tensor_type(self.output)
        if source.element_type != dest.element_type:
            raise VerifyException("input and output buffers have different element types")
        if problem := self.members_problem(source, dest):
            raise VerifyException(problem)
        sent, received = _member_numel(source), _member_numel(dest)
        if sent is not None and received is not None and (problem := self.size_problem(sent, received)):
            raise VerifyException(problem)

    def members_problem(self, source: TensorType, dest: TensorType) -> str | None:
        """Why a team member cannot take part, judged by the meshes of the buffers."""
        team = self.teams
        for device in team.devices:
            holds = source.is_on_rank(device), dest.is_on_rank(device)
            if not any(holds):
                return f"team {team} names device {device} outside the buffers' meshes {_meshes(source, dest)}"
            if self.EVERY_MEMBER_HOLDS_BOTH and not all(holds):
                missing, t = ("input", source) if not holds[0] else ("output", dest)
                return f"team {team} names device {device}, which holds no {missing} buffer (mesh {t.mesh})"
            root = self.root_of(device)
            if self.ROOT_SENDS and root == device and not source.is_on_rank(root):
                return f"root {root} holds no input buffer (mesh {source.mesh})"
        return None

    def size_problem(self, input_numel: int, output_numel: int) -> str | None:
        """Why one member's buffers of these element counts cannot take part (the
        default: equal sizes)."""
        if input_numel != output_numel:
            return f"output has {output_numel} elements but input {input_numel}; {self.name} needs equal sizes"
        return None

    def gathered_problem(self, whole: int, part: int, what: str) -> str | None:
        """`what` ("input" or "output") must hold `team size` parts."""
        size = self.team_size
        if whole != size * part:
            return f"{what} has {whole} elements, expected {size * part} (team of {size} x {part})"
        return None

    def verify_transport(self) -> None:
        if not self.uses_copy_engine:
            if self.via is not None:
                raise VerifyException("only the copy-engine transport receives through a `via` buffer")
            return
        algorithm = copy_engine_algorithm(self.name)
        if algorithm is None:
            raise VerifyException(
                f"{self.name} has no copy-engine algorithm (allgather, reduce_scatter and allreduce have)"
            )
        if self.teams.along is not None:
            raise VerifyException("the copy-engine transport needs its team listed (its symmetric buffers span one team)")
        needs_via = self.via_inputs(algorithm) > 0
        if (self.via is not None) != needs_via:
            why = "" if needs_via or not algorithm.via_inputs else (
                " on a team of two with `own` and a symmetric output (the peer's chunks land in the output)")
            raise VerifyException(
                f"{self.name} with the copy-engine transport {'needs a' if needs_via else 'takes no'} `via` buffer{why}"
            )
        if self.via is not None:
            self.verify_via(algorithm)

    def via_inputs(self, algorithm: CopyEngineAlgorithm) -> int:
        """Size of the `via` buffer `algorithm` needs, in inputs per member (0: none)."""
        return algorithm.via_inputs_needed(self.team_size, views_symmetric_buffer(self.output), self.onto_product)

    @property
    def onto_product(self) -> bool:
        """Is this member's part a product the collective computes onto the received
        chunks (`own`: `OwnProductCollectiveOp`)?"""
        return False

    def verify_via(self, algorithm: CopyEngineAlgorithm) -> None:
        assert self.via is not None  # verify_ calls it only with one
        input_type, via_type = tensor_type(self.input), tensor_type(self.via)
        if via_type.element_type != input_type.element_type:
            raise VerifyException("the via buffer and the input have different element types")
        member = self.teams.devices[0]
        local_in, local_via = input_type.local_shape(member), via_type.local_shape(member)
        if local_in is None or local_via is None or DYNAMIC in local_in + local_via:
            return  # a member outside the mesh, or dynamic: checked when the program runs
        problem = algorithm.input_problem(math.prod(local_in), self.team_size)
        if problem is not None:
            raise VerifyException(f"{self.name} cannot use the copy-engine transport: {problem}")
        expected = self.via_inputs(algorithm) * math.prod(local_in)
        if math.prod(local_via) != expected:
            raise VerifyException(
                f"the via buffer holds {math.prod(local_via)} elements per member but {self.name} needs "
                f"{expected} for an input of {math.prod(local_in)} on a team of {self.team_size}"
            )


def collective_properties(team: Team | Sequence[int], root: int | None, reduction: ReduceKind | None,
                          transport: Transport) -> dict[str, Attribute | None]:
    """A collective's properties (None: absent)."""
    return {
        "team": TeamAttr.of(team),
        "root": i64_attr(root) if root is not None else None,
        "reduction": ReduceKindAttr(reduction) if reduction is not None else None,
        "transport": TransportAttr(transport),
    }


def view_root(value: SSAValue) -> SSAValue:
    """The buffer a view (a chain of `hir.alias_select`, `hir.alias_chunk`, `hir.alias_as`)
    is of (`value` itself where it is no view)."""
    while isinstance(value.owner, VIEW_OPS):
        value = value.owner.input
    return value


def views_symmetric_buffer(value: SSAValue) -> bool:
    """Is `value` a `hir.allocate symmetric` or a view of one?"""
    owner = view_root(value).owner
    return isinstance(owner, AllocateOp) and owner.is_symmetric


def _member_numel(t: TensorType) -> int | None:
    """Element count of one mesh member's buffer of `t` (None when dynamic)."""
    shape = t.local_shape()
    assert shape is not None  # without a rank: the shape of any member
    return None if DYNAMIC in shape else math.prod(shape)


def _local_value_shape(t: TensorType) -> list[int]:
    """One member's local extent of each value axis, in logical order."""
    return [t.local_extent(i) for i in t.value_positions()]


def _meshes(*types: TensorType) -> str:
    meshes = [str(t.mesh) for t in types if t.mesh is not None]
    return " and ".join(dict.fromkeys(meshes)) or "(none)"


class RootedCollectiveOp(CollectiveOp):
    """A collective with a root device (`root R`)."""

    HAS_ROOT: ClassVar[bool] = True
    EVERY_MEMBER_HOLDS_BOTH: ClassVar[bool] = False


class ReducingCollectiveOp(CollectiveOp):
    """A collective that reduces (`op sum|prod|max|min`)."""

    REDUCES: ClassVar[bool] = True


@op_definition
class AllgatherOp(CollectiveOp):
    """Every team member gets all shards, concatenated along axis 0.

    Copy engine: posting copies the input into slot `me` of every member's output (a view
    of a symmetric buffer); `hir.wait %w from %p` waits for member %p's slot only.
    `peers_only`: the post writes the other members' slots only and leaves slot `me` as
    it is, for a program that reads its own part from the input in place (split-by-member
    makes it so); waiting `from` this rank's own position is then an error.
    """

    name = "hir.allgather"
    peers_only = opt_prop_def(UnitAttr)
    assembly_format = (
        "$input `->` $output (`via` $via^)? `team` $team (`root` $root^)? (`op` $reduction^)? "
        "(`transport` $transport^)? (`peers_only` $peers_only^)? attr-dict `:` type($input) `->` type($output) "
        "(`,` type($via)^)?"
    )

    @property
    def fills_own_slot(self) -> bool:
        return self.peers_only is None

    def verify_transport(self) -> None:
        super().verify_transport()
        if not self.fills_own_slot and not self.uses_copy_engine:
            raise VerifyException("`peers_only` needs the copy-engine transport (NCCL fills every slot)")

    def size_problem(self, input_numel: int, output_numel: int) -> str | None:
        return self.gathered_problem(output_numel, input_numel, "output")


class OwnProductCollectiveOp(ReducingCollectiveOp):
    """A reducing collective that may compute this member's contribution itself: `own`
    holds the two operands of the matmul whose product replaces input chunk `me`, which
    the collective then does not read; the product is computed onto the other members'
    chunks (`addmm`, the reduction in the GEMM's epilogue; split-by-member's
    `reduce-in-producer` and `reduce-scatter-in-producer`)."""

    own = var_operand_def(TensorType)
    """None, or the two operands of a matmul whose product is this member's contribution in
    place of input chunk `me` (`own (%a, %b)`)."""
    assembly_format = (
        "$input `->` $output (`via` $via^)? (`own` `(` $own^ `:` type($own) `)`)? `team` $team (`root` $root^)? "
        "(`op` $reduction^)? "
        "(`transport` $transport^)? attr-dict `:` type($input) `->` type($output) (`,` type($via)^)?"
    )

    def __init__(
        self, input: SSAValue, output: SSAValue, team: Team | Sequence[int], *,
        reduction: ReduceKind | None = None, transport: Transport = Transport.NCCL, via: SSAValue | None = None,
        own: Sequence[SSAValue] = (), root: None = None,
    ):
        # xDSL orders a subclass's operand definitions before its bases' (own first).
        init_segmented(self, [own, input, output, via], [WorkType()], collective_properties(team, root, reduction, transport))

    @property
    def onto_product(self) -> bool:
        return bool(self.own)

    def verify_transport(self) -> None:
        super().verify_transport()
        if self.own:
            self.verify_own()

    def verify_own(self) -> None:
        if len(self.own) != 2:
            raise VerifyException(f"`own` takes a matmul's two operands, got {len(self.own)}")
        if not self.uses_copy_engine or self.reduction is None or self.reduction.data != ReduceKind.SUM:
            raise VerifyException("`own` needs the copy-engine transport and `op sum` (its product is added onto the "
                                  "other members' chunks)")
        a, b, chunk = (tensor_type(v) for v in (*self.own, self.input))
        if a.element_type != chunk.element_type or b.element_type != chunk.element_type:
            raise VerifyException("the `own` operands and the input have different element types")
        if not is_floating_point(chunk.element_type):
            raise VerifyException(f"`own` multiplies {chunk.element_type} matrices; it needs a floating-point type")
        member = self.teams.devices[0]
        a_shape, b_shape, input_shape = (t.local_shape(member) for t in (a, b, chunk))
        if a_shape is None or b_shape is None or input_shape is None or DYNAMIC in a_shape + b_shape + input_shape:
            return  # a member outside the mesh, or dynamic: the product's GEMM refuses a mismatch when it runs
        if len(b_shape) < 2 or any(e != 1 for e in b_shape[:-2]) or not a_shape or a_shape[-1] != b_shape[-2]:
            raise VerifyException(f"`own` multiplies {list(a_shape)} by {list(b_shape)}: it needs rows of "
                                  "length K and one K x N matrix (its batch axes of one element)")
        product = math.prod(a_shape) // a_shape[-1] * b_shape[-1]
        if product * self.team_size != math.prod(input_shape):
            raise VerifyException(f"`own`'s product has {product} elements per member, but a chunk of the input has "
                                  f"{math.prod(input_shape) // self.team_size}")


@op_definition
class AllreduceOp(OwnProductCollectiveOp):
    """Every team member gets the reduction of all inputs.

    Copy engine: a reduce-scatter then an all-gather of the reduced chunks. Posting copies
    input chunk p into member p's `via`, for every other member p, and does not read input
    chunk `me`. Waiting hands the rest to the communication stream, after the current
    stream's work so far (which computed chunk `me`): it reduces chunk `me` with the
    received ones into the output and sends it to every other member; the current stream
    then waits for theirs. Where the output is a view of a symmetric buffer, the reduced
    chunks land in the members' outputs and `via` is the input's size; otherwise they land
    in a second half of `via` (twice the input) and are copied into the output. With `own`,
    phase 2 computes this member's product onto the other members' chunks.
    """

    name = "hir.allreduce"


@op_definition
class ReduceScatterOp(OwnProductCollectiveOp):
    """Reduce, then member i keeps chunk i (axis 0).

    Copy engine: posting copies input chunk p into slot `me` of member p's `via` (the
    input's size), for every other member p, and does not read input chunk `me`; waiting
    reduces input chunk `me` and the received slots into the output. So the own chunk may
    be computed after the post, while the copies run. With `own`, waiting computes this
    member's product onto the received chunks instead; where the output is a view of a
    symmetric buffer, the member's lead pushes its chunk straight into it (on a team of
    two, no `via`).
    """

    name = "hir.reduce_scatter"

    def size_problem(self, input_numel: int, output_numel: int) -> str | None:
        return self.gathered_problem(input_numel, output_numel, "input")


@op_definition
class ScatterOp(RootedCollectiveOp):
    """The root's input is split in team-size chunks, one per member."""

    name = "hir.scatter"
    ROOT_SENDS: ClassVar[bool] = True

    def size_problem(self, input_numel: int, output_numel: int) -> str | None:
        return self.gathered_problem(input_numel, output_numel, "input")

    def needs_input(self, member: int) -> bool:
        return member == self.root_of(member)

    def needs_output(self, member: int) -> bool:
        return member != self.root_of(member)


@op_definition
class GatherOp(RootedCollectiveOp):
    """The root gets every member's input, concatenated; a root that holds no input may
    have no slot for itself (team size - 1 chunks, nvFuser's postGather)."""

    name = "hir.gather"

    def size_problem(self, input_numel: int, output_numel: int) -> str | None:
        problem = self.gathered_problem(output_numel, input_numel, "output")
        root_sends = tensor_type(self.input).is_on_rank(self.root_of(self.teams.devices[0]))
        if problem and not root_sends and output_numel == (self.team_size - 1) * input_numel:
            return None
        return problem

    def needs_input(self, member: int) -> bool:
        return False  # a member without input sends zeros

    def needs_output(self, member: int) -> bool:
        return False  # a root without output gathers into scratch


@op_definition
class BroadcastOp(RootedCollectiveOp):
    """Every member gets the root's input."""

    name = "hir.broadcast"
    ROOT_SENDS: ClassVar[bool] = True

    def needs_input(self, member: int) -> bool:
        return member == self.root_of(member)

    def needs_output(self, member: int) -> bool:
        return member != self.root_of(member)


@op_definition
class ReduceOp(RootedCollectiveOp, ReducingCollectiveOp):
    """The root gets the reduction of all inputs."""

    name = "hir.reduce"

    def needs_input(self, member: int) -> bool:
        return False  # a member without input adds the identity

    def needs_output(self, member: int) -> bool:
        return False  # a root without output reduces into scratch


@op_definition
class SendRecvOp(RootedCollectiveOp):
    """Team [sender, receiver], root = sender: one copy (a team of one: a local copy)."""

    name = "hir.send_recv"
    ROOT_SENDS: ClassVar[bool] = True

    def members_problem(self, source: TensorType, dest: TensorType) -> str | None:
        team = self.teams
        if team.along is not None or team.size > 2 or self.root_id != team.devices[0]:
            return (f"send_recv needs a team [sender, receiver] with root = team[0] (the sender), got team {team} "
                    f"root {self.root_id}")
        if not dest.is_on_rank(team.devices[-1]):
            return f"receiver {team.devices[-1]} holds no output buffer (mesh {dest.mesh})"
        return super().members_problem(source, dest)

    def needs_input(self, member: int) -> bool:
        return member == self.teams.devices[0]

    def needs_output(self, member: int) -> bool:
        return member == self.teams.devices[-1]


@op_definition
class AllToAllOp(CollectiveOp):
    """Member i sends chunk j of its input to member j."""

    name = "hir.all_to_all"

    def size_problem(self, input_numel: int, output_numel: int) -> str | None:
        size = self.team_size
        if input_numel != output_numel or input_numel % size:
            return (f"all_to_all needs equal input and output sizes divisible by the team size {size}, "
                    f"got {input_numel} and {output_numel}")
        return None


@op_definition
class ShiftOp(CollectiveOp):
    """%w = hir.shift %in -> %out team [0, 1, 2, 3] offset %k : T -> R

    Member p's out = the in of the member at position (p + k) mod D (D: the team size):
    every member receives from the member k places after it and sends to the one k places
    before it, in one exchange, so each send meets its receive whatever k is (a rotation,
    MLIR shard's `shift` with a run-time offset). k = 0 mod D is a local copy. Buffers are
    flat and of equal size (runtime/communicator.py).
    """

    name = "hir.shift"
    input = operand_def(TensorType)  # declared again so that the offset comes last
    output = operand_def(TensorType)
    via = opt_operand_def(TensorType)
    offset = operand_def(IndexType)
    assembly_format = (
        "$input `->` $output (`via` $via^)? `team` $team `offset` $offset (`root` $root^)? (`op` $reduction^)? "
        "(`transport` $transport^)? attr-dict `:` type($input) `->` type($output) (`,` type($via)^)?"
    )

    def __init__(self, input: SSAValue, output: SSAValue, team: Team | Sequence[int], offset: SSAValue):
        IRDLOperation.__init__(
            self, operands=[input, output, None, offset], result_types=[WorkType()],
            properties={"team": TeamAttr.of(team)},
        )


COLLECTIVE_OPS: list[type[CollectiveOp]] = [
    AllgatherOp, AllreduceOp, ReduceScatterOp, ScatterOp, GatherOp, BroadcastOp, ReduceOp, SendRecvOp, AllToAllOp,
    ShiftOp,
]


class PointToPointOp(WaitedOp):
    """%w = hir.send %buf, %peer : T   /   %w = hir.recv %buf, %peer : T  (peer: a world rank)"""

    buffer = operand_def(TensorType)
    peer = operand_def(IndexType)
    work = result_def(WorkType)
    traits = traits_def(MemoryWriteEffect())
    assembly_format = "$buffer `,` $peer attr-dict `:` type($buffer)"

    def __init__(self, buffer: SSAValue, peer: SSAValue):
        super().__init__(operands=[buffer, peer], result_types=[WorkType()])

    def verify_(self) -> None:
        self.verify_work_is_waited()

    def takes_part(self, rank: int) -> bool:
        """Does `rank` post this transfer? A rank that does not hold the buffer skips it."""
        return tensor_type(self.buffer).is_on_rank(rank)


@op_definition
class SendOp(PointToPointOp):
    name = "hir.send"


@op_definition
class RecvOp(PointToPointOp):
    name = "hir.recv"


@op_definition
class WaitOp(HostOp):
    """hir.wait %w (from %p)?   -- the current stream waits for the collective (the host
    does not); with `from`, only for the part of the team member at position %p (a
    copy-engine all-gather's slot %p; any other collective is waited for whole)."""

    name = "hir.wait"
    work = operand_def(WorkType)
    member = opt_operand_def(IndexType)
    traits = traits_def(MemoryWriteEffect())
    assembly_format = "$work (`from` $member^)? attr-dict"

    def __init__(self, work: SSAValue, member: SSAValue | None = None):
        init_flat(self, [work, member])


@op_definition
class TeamPositionOp(IndexValueOp):
    """%p = hir.team_position team [0, 1]   -- this rank's position in the team (rank
    dependent; -1 on a rank outside the team, whose ops on the team's buffers are skipped)."""

    name = "hir.team_position"
    team = prop_def(TeamAttr)
    assembly_format = "`team` $team attr-dict"

    def __init__(self, team: Team | Sequence[int]):
        super().__init__(properties={"team": TeamAttr.of(team)})

    @property
    def teams(self) -> Team:
        return self.team.data

    def position_of(self, rank: int) -> int:
        """The value this op has on `rank`."""
        return self.teams.position_of(rank)

    def verify_(self) -> None:
        if problem := self.teams.problem():
            raise VerifyException(problem)


@op_definition
class LocalShardOp(HostOp):
    """hir.local_shard %in -> %out axis 1 team [0, 1] : T -> R   -- member j of its team
    copies part j of its own input, cut along logical axis `axis` of the output into as
    many equal parts as the team has members, into its output: the shards of a tensor
    every member holds whole (replicated on a mesh holding the team), so nothing moves
    between devices and nothing is waited. The team may be each rank's slice of a 2-D mesh
    (`team [[0, 1], [2, 3]] along didy`, one op for every slice). A rank outside the team
    skips it. The input's value axes are the output's, at the member's local extents but
    along `axis`."""

    name = "hir.local_shard"
    input = operand_def(TensorType)
    output = operand_def(TensorType)
    axis = prop_def(IntegerAttr[I64])
    team = prop_def(TeamAttr)
    traits = traits_def(MemoryWriteEffect())
    assembly_format = "$input `->` $output `axis` $axis `team` $team attr-dict `:` type($input) `->` type($output)"

    def __init__(self, input: SSAValue, output: SSAValue, axis: int, team: Team | Sequence[int]):
        init_flat(self, [input, output], [], {"axis": i64_attr(axis), "team": TeamAttr.of(team)})

    @property
    def teams(self) -> Team:
        return self.team.data

    @property
    def dim(self) -> int:
        """`axis` as a value axis (torch dimension) of both buffers."""
        return tensor_type(self.output).value_position(self.axis.value.data)

    def verify_(self) -> None:
        if problem := self.teams.problem():
            raise VerifyException(problem)
        source, dest = tensor_type(self.input), tensor_type(self.output)
        if source.element_type != dest.element_type:
            raise VerifyException("input and output buffers have different element types")
        axis = self.axis.value.data
        if not 0 <= axis < dest.rank or dest.axes[axis].is_reduction:
            raise VerifyException(f"axis {axis} is not a value axis of the output")
        devices = self.teams.devices
        outside = [d for d in devices if not (source.is_on_rank(d) and dest.is_on_rank(d))]
        if outside:
            raise VerifyException(f"team {self.teams} names devices {outside} that do not hold both buffers "
                                  f"(meshes {_meshes(source, dest)})")
        whole, part = _local_value_shape(source), _local_value_shape(dest)
        expected = list(part)
        if len(whole) == len(part) and part[self.dim] != DYNAMIC:
            expected[self.dim] = part[self.dim] * self.teams.size
        if len(whole) != len(part) or any(DYNAMIC not in (w, e) and w != e for w, e in zip(whole, expected)):
            raise VerifyException(f"the input's local shape {list(whole)} must be the output's {list(part)} with "
                                  f"axis {axis} {self.teams.size} times as long")


HIR = Dialect(
    "hir",
    [
        ProgramOp, ReturnOp, AllocateOp, DeallocateOp, AliasSelectOp, AliasChunkOp, AliasAsOp, ExtentOp,
        GetCurrentStreamOp, StreamOp, SetCurrentStreamOp, SynchronizeOp, NumberOfStreamsOp,
        PostOnStreamOp, *COLLECTIVE_OPS, LocalShardOp, SendOp, RecvOp, WaitOp, TeamPositionOp,
    ],
    [StreamType, WorkType, TransportAttr, TeamAttr],
)
