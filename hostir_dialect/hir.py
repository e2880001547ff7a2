"""The `hir` dialect: the host program one rank runs. Buffer semantics, side effects.

Every op that touches buffers, streams or the network declares a memory effect, so
xDSL's dead-code elimination never removes it; only the value-producing queries
(`hir.stream`, `hir.number_of_streams`, `hir.extent`, `hir.team_position`,
`hir.alias_select`) are pure.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import ClassVar

from xdsl.dialects import scf
from xdsl.dialects.builtin import (
    I64,
    DenseArrayBase,
    FlatSymbolRefAttr,
    IndexType,
    IntegerAttr,
    UnitAttr,
    i64,
)
from xdsl.dialects.utils.enum_attribute import EnumAttribute
from xdsl.ir import Attribute, Dialect, Operation, ParametrizedAttribute, SpacedOpaqueSyntaxAttribute, SSAValue, TypeAttribute
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
from .definition import op_definition
from .functions import FunctionLikeOp, ReturnLikeOp, lookup_function
from .fusion import ComputeOp, FuncOp, ReduceKind, ReduceKindAttr
from .tensor_type import DYNAMIC, TensorType, tensor_type

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
        rank = tensor_type(self.input).rank
        if not 0 <= self.axis_index < rank:
            raise VerifyException(f"axis {self.axis_index} is out of range for rank {rank}")


@op_definition
class AliasSelectOp(TensorAxisOp):
    """%v = hir.alias_select %t[%i] axis 0 : T -> R   -- a view of one slice, never a copy.

    `axis` is a logical axis of T; on a broadcast axis the index is taken as 0.
    """

    name = "hir.alias_select"
    input = operand_def(TensorType)
    index = operand_def(IndexType)
    result = result_def(TensorType)
    traits = traits_def(Pure())
    assembly_format = "$input `[` $index `]` `axis` $axis attr-dict `:` type($input) `->` type($result)"

    def __init__(self, input: SSAValue, index: SSAValue, axis: int, result_type: TensorType):
        init_flat(self, [input, index], [result_type], {"axis": i64_attr(axis)})

    def verify_(self) -> None:
        super().verify_()
        source, result = tensor_type(self.input), tensor_type(self.result)
        if source.axes[self.axis_index].is_reduction:
            raise VerifyException(f"axis {self.axis_index} is a reduction axis, which has no storage to select from")
        expected = [a.extent for i, a in enumerate(source.axes) if i != self.axis_index]
        if [a.extent for a in result.axes] != expected:
            raise VerifyException(f"result extents {[a.extent for a in result.axes]} must be the input's without axis {self.axis_index}: {expected}")
        if result.element_type != source.element_type:
            raise VerifyException("a view keeps the element type of its input")


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
    be waited, or its buffers could be read or reused before the data has moved."""

    def verify_work_is_waited(self) -> None:
        work = self.results[0]
        if not any(isinstance(use.operation, WaitOp) for use in work.uses):
            name = f"%{work.name_hint}" if work.name_hint else "its work token"
            raise VerifyException(f"work token {name} is never waited (hir.wait)")


class CollectiveOp(WaitedOp):
    """%w = hir.<collective> %in -> %out (via %r)? team [0, 1] (root 0)? (op sum)?
              (transport copy_engine)? : T -> R (, V)?

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
    team = prop_def(DenseArrayBase[I64])
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
    HAS_COPY_ENGINE_ALGORITHM: ClassVar[bool] = False
    EVERY_MEMBER_HOLDS_BOTH: ClassVar[bool] = True
    """Every member sends its input and receives into its output."""
    ROOT_SENDS: ClassVar[bool] = False
    """The root's input is what the others receive."""

    def __init__(
        self, input: SSAValue, output: SSAValue, team: Sequence[int], *,
        root: int | None = None, reduction: ReduceKind | None = None,
        transport: Transport = Transport.NCCL, via: SSAValue | None = None,
    ):
        init_segmented(self, [input, output, via], [WorkType()], {
            "team": DenseArrayBase.from_list(i64, team),
            "root": i64_attr(root) if root is not None else None,
            "reduction": ReduceKindAttr(reduction) if reduction is not None else None,
            "transport": TransportAttr(transport),
        })

    @property
    def uses_copy_engine(self) -> bool:
        return self.transport.data == Transport.COPY_ENGINE

    def copy_engine_via_elements(self, input_elements: int) -> int:
        """Elements of the `via` buffer the copy-engine algorithm needs per member (0: none)."""
        return 0

    @classmethod
    def copy_engine_input_problem(cls, input_elements: int, team_size: int) -> str | None:
        """Why the copy-engine algorithm cannot take an input of this many elements per
        member (None if it can)."""
        return None

    COPY_ENGINE_PHASES: ClassVar[int] = 1
    """Rounds of copies and signals of the copy-engine algorithm, one after the other."""

    @classmethod
    def copy_engine_share_per_peer(cls, input_size: float, team_size: int) -> float:
        """What the copy-engine algorithm copies to each peer per phase, of an input of
        `input_size` (elements or bytes) per member: the whole input by default."""
        return input_size

    @property
    def team_ids(self) -> tuple[int, ...]:
        return self.team.get_values()

    @property
    def root_id(self) -> int | None:
        return self.root.value.data if self.root is not None else None

    def takes_part(self, rank: int) -> bool:
        """Does `rank` post this collective? A rank outside the team skips it."""
        return rank in self.team_ids

    def needs_input(self, member: int) -> bool:
        """Must team member `member` hold an input buffer? One that must and does not
        cannot post (runtime/communicator.py); where it need not, it posts scratch."""
        return True

    def needs_output(self, member: int) -> bool:
        """Must team member `member` hold an output buffer? (See `needs_input`.)"""
        return True

    def verify_(self) -> None:
        team = self.team_ids
        if not team:
            raise VerifyException("team must not be empty")
        if any(d < 0 for d in team):
            raise VerifyException(f"team {list(team)} names a negative device id")
        if len(set(team)) != len(team):
            raise VerifyException(f"team {list(team)} repeats a device")
        if self.HAS_ROOT != (self.root is not None):
            raise VerifyException(f"{self.name} {'needs' if self.HAS_ROOT else 'takes no'} root")
        if self.root_id is not None and self.root_id not in team:
            raise VerifyException(f"root {self.root_id} is not in team {list(team)}")
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
        counts = _member_numel(source), _member_numel(dest)
        if None not in counts and (problem := self.size_problem(*counts)):
            raise VerifyException(problem)

    def members_problem(self, source: TensorType, dest: TensorType) -> str | None:
        """Why a team member cannot take part, judged by the meshes of the buffers."""
        team = list(self.team_ids)
        for device in team:
            holds = source.is_on_rank(device), dest.is_on_rank(device)
            if not any(holds):
                return f"team {team} names device {device} outside the buffers' meshes {_meshes(source, dest)}"
            if self.EVERY_MEMBER_HOLDS_BOTH and not all(holds):
                missing, t = ("input", source) if not holds[0] else ("output", dest)
                return f"team {team} names device {device}, which holds no {missing} buffer (mesh {t.mesh})"
        if self.ROOT_SENDS and not source.is_on_rank(self.root_id):
            return f"root {self.root_id} holds no input buffer (mesh {source.mesh})"
        return None

    def size_problem(self, input_numel: int, output_numel: int) -> str | None:
        """Why one member's buffers of these element counts cannot take part (the
        default: equal sizes)."""
        if input_numel != output_numel:
            return f"output has {output_numel} elements but input {input_numel}; {self.name} needs equal sizes"
        return None

    def gathered_problem(self, whole: int, part: int, what: str) -> str | None:
        """`what` ("input" or "output") must hold `team size` parts."""
        size = len(self.team_ids)
        if whole != size * part:
            return f"{what} has {whole} elements, expected {size * part} (team of {size} x {part})"
        return None

    def verify_transport(self) -> None:
        if not self.uses_copy_engine:
            if self.via is not None:
                raise VerifyException("only the copy-engine transport receives through a `via` buffer")
            return
        if not self.HAS_COPY_ENGINE_ALGORITHM:
            raise VerifyException(
                f"{self.name} has no copy-engine algorithm (allgather, reduce_scatter and allreduce have)"
            )
        needs_via = self.copy_engine_via_elements(1) > 0
        if (self.via is not None) != needs_via:
            raise VerifyException(
                f"{self.name} with the copy-engine transport {'needs a' if needs_via else 'takes no'} `via` buffer"
            )
        if self.via is not None:
            self.verify_via()

    def verify_via(self) -> None:
        input_type, via_type = tensor_type(self.input), tensor_type(self.via)
        if via_type.element_type != input_type.element_type:
            raise VerifyException("the via buffer and the input have different element types")
        member = self.team_ids[0]
        local_in, local_via = input_type.local_shape(member), via_type.local_shape(member)
        if local_in is None or local_via is None or DYNAMIC in local_in + local_via:
            return  # a member outside the mesh, or dynamic: checked when the program runs
        problem = self.copy_engine_input_problem(math.prod(local_in), len(self.team_ids))
        if problem is not None:
            raise VerifyException(f"{self.name} cannot use the copy-engine transport: {problem}")
        expected = self.copy_engine_via_elements(math.prod(local_in))
        if math.prod(local_via) != expected:
            raise VerifyException(
                f"the via buffer holds {math.prod(local_via)} elements per member but {self.name} needs "
                f"{expected} for an input of {math.prod(local_in)} on a team of {len(self.team_ids)}"
            )


def _member_numel(t: TensorType) -> int | None:
    """Element count of one mesh member's buffer of `t` (None when dynamic)."""
    shape = t.local_shape()
    assert shape is not None  # without a rank: the shape of any member
    return None if DYNAMIC in shape else math.prod(shape)


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
    """

    name = "hir.allgather"
    HAS_COPY_ENGINE_ALGORITHM: ClassVar[bool] = True

    def size_problem(self, input_numel: int, output_numel: int) -> str | None:
        return self.gathered_problem(output_numel, input_numel, "output")


@op_definition
class AllreduceOp(ReducingCollectiveOp):
    """Every team member gets the reduction of all inputs.

    Copy engine: a reduce-scatter then an all-gather of the reduced chunks, through `via`
    (twice the input: the other members' input chunks, then their reduced chunks). Posting
    copies input chunk p into member p's `via`, for every other member p, and does not read
    input chunk `me`; waiting reduces chunk `me` into the output, sends it to every other
    member and copies theirs into the output.
    """

    name = "hir.allreduce"
    HAS_COPY_ENGINE_ALGORITHM: ClassVar[bool] = True

    def copy_engine_via_elements(self, input_elements: int) -> int:
        return 2 * input_elements  # every member's input chunk, then every member's reduced chunk

    COPY_ENGINE_PHASES: ClassVar[int] = 2

    @classmethod
    def copy_engine_share_per_peer(cls, input_size: float, team_size: int) -> float:
        return input_size / team_size  # one chunk per phase

    @classmethod
    def copy_engine_input_problem(cls, input_elements: int, team_size: int) -> str | None:
        if input_elements % team_size:
            return f"its input of {input_elements} elements per member does not split into {team_size} equal chunks"
        return None


@op_definition
class ReduceScatterOp(ReducingCollectiveOp):
    """Reduce, then member i keeps chunk i (axis 0).

    Copy engine: posting copies input chunk p into slot `me` of member p's `via` (the
    input's size), for every other member p, and does not read input chunk `me`; waiting
    reduces input chunk `me` and the received slots into the output. So the own chunk may
    be computed after the post, while the copies run.
    """

    name = "hir.reduce_scatter"
    HAS_COPY_ENGINE_ALGORITHM: ClassVar[bool] = True

    def copy_engine_via_elements(self, input_elements: int) -> int:
        return input_elements  # one chunk from every member

    @classmethod
    def copy_engine_share_per_peer(cls, input_size: float, team_size: int) -> float:
        return input_size / team_size  # the peer's chunk

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
        return member == self.root_id

    def needs_output(self, member: int) -> bool:
        return member != self.root_id


@op_definition
class GatherOp(RootedCollectiveOp):
    """The root gets every member's input, concatenated; a root that holds no input may
    have no slot for itself (team size - 1 chunks, nvFuser's postGather)."""

    name = "hir.gather"

    def size_problem(self, input_numel: int, output_numel: int) -> str | None:
        problem = self.gathered_problem(output_numel, input_numel, "output")
        root_sends = tensor_type(self.input).is_on_rank(self.root_id)
        if problem and not root_sends and output_numel == (len(self.team_ids) - 1) * input_numel:
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
        return member == self.root_id

    def needs_output(self, member: int) -> bool:
        return member != self.root_id


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
        team = list(self.team_ids)
        if len(team) > 2 or self.root_id != team[0]:
            return f"send_recv needs a team [sender, receiver] with root = team[0] (the sender), got team {team} root {self.root_id}"
        if not dest.is_on_rank(team[-1]):
            return f"receiver {team[-1]} holds no output buffer (mesh {dest.mesh})"
        return super().members_problem(source, dest)

    def needs_input(self, member: int) -> bool:
        return member == self.team_ids[0]

    def needs_output(self, member: int) -> bool:
        return member == self.team_ids[-1]


@op_definition
class AllToAllOp(CollectiveOp):
    """Member i sends chunk j of its input to member j."""

    name = "hir.all_to_all"

    def size_problem(self, input_numel: int, output_numel: int) -> str | None:
        size = len(self.team_ids)
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

    def __init__(self, input: SSAValue, output: SSAValue, team: Sequence[int], offset: SSAValue):
        IRDLOperation.__init__(
            self, operands=[input, output, None, offset], result_types=[WorkType()],
            properties={"team": DenseArrayBase.from_list(i64, team)},
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
    team = prop_def(DenseArrayBase[I64])
    assembly_format = "`team` $team attr-dict"

    def __init__(self, team: Sequence[int]):
        super().__init__(properties={"team": DenseArrayBase.from_list(i64, team)})

    @property
    def team_ids(self) -> tuple[int, ...]:
        return self.team.get_values()

    def position_of(self, rank: int) -> int:
        """The value this op has on `rank`."""
        team = self.team_ids
        return team.index(rank) if rank in team else -1

    def verify_(self) -> None:
        team = self.team_ids
        if not team or len(set(team)) != len(team):
            raise VerifyException(f"team {list(team)} must be non-empty and repeat no device")


HIR = Dialect(
    "hir",
    [
        ProgramOp, ReturnOp, AllocateOp, DeallocateOp, AliasSelectOp, ExtentOp,
        GetCurrentStreamOp, StreamOp, SetCurrentStreamOp, SynchronizeOp, NumberOfStreamsOp,
        PostOnStreamOp, *COLLECTIVE_OPS, SendOp, RecvOp, WaitOp, TeamPositionOp,
    ],
    [StreamType, WorkType, TransportAttr],
)
