"""Hypothesis strategies that write random fusions through the public Python API.

A drawn `Program` is Python source that uses only `FusionDefinition`, `fd.define_tensor`,
`fd.ops.*`, `fd.add_output`, `DeviceMesh`, `set_device_mesh`, `outer_split`,
`axis(i).parallelize` and `set_allocation_order`. Each line is executed as soon as it is
drawn, so later choices see the shapes the frontend really inferred; a line the frontend
rejects (`FusionDefinitionError`) is dropped and counted in `rejected_calls`. The source is
also the reproducer: `build(program)` executes it as a user would.

Numerical traps are avoided in the program itself, not by clamping inputs (inputs are
uniform in [-1, 1), see harness.py): log/sqrt/rsqrt/reciprocal and the divisor of div
read `abs(x) + 1`, the base of pow reads `abs(x) + 0.5`, so no NaN or inf is produced
from inputs in range. Comparisons and casts to integers take only "exact" operands
(values computed without a sum/prod/matmul/linear, whose rounding depends on how the
work is split across ranks), so a last-bit rounding difference cannot flip a predicate.
"""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass, field

from hypothesis import strategies as st

from hostir_dialect import DataType, DeviceMesh, FusionDefinition, FusionDefinitionError, ParallelType

API = {"FusionDefinition": FusionDefinition, "DeviceMesh": DeviceMesh, "ParallelType": ParallelType,
       "DataType": DataType}
"""All the names a program's source may use."""

FLOATS = ("float32", "float64", "bfloat16", "float16")
INTEGERS = ("int64", "int32")
SAFE_UNARY = ("neg", "abs", "relu", "exp", "sin", "cos", "tanh", "sigmoid", "silu")
GUARDED_UNARY = ("log", "sqrt", "rsqrt", "reciprocal")  # read abs(x) + 1
INTEGER_UNARY = ("neg", "abs", "relu")  # the dialect keeps an integer type for exp & co.
ARITHMETIC = ("add", "sub", "mul", "maximum", "minimum", "div", "pow")
COMPARISONS = ("eq", "ne", "lt", "le", "gt", "ge")
REDUCTIONS = ("sum", "max", "min", "prod")
EXTENTS = {1: (2, 4, 8, 3, 6, 1), 2: (2, 4, 8, 4, 2, 8, 6, 3, 1), 3: (3, 6, 3, 6, 2, 4, 1), 4: (4, 8, 4, 8, 2, 6, 1, 3),
           5: (5, 10, 20, 5, 2, 4, 1, 3), 6: (6, 12, 6, 12, 2, 3, 1, 4), 8: (8, 16, 8, 4, 2, 1, 6)}
"""Extents by world size, most of them divisible by the devices of the meshes."""
OP_KINDS = ("unary", "binary", "binary", "reduce", "matmul", "linear", "broadcast", "permute",
            "reshape", "squeeze", "slice", "select", "cast", "set", "compare", "parity", "parity", "parity")
"""`parity`: one of the ops of nvFuser's multi-device tests (issue 28), PARITY_OPS."""
MAX_OPS = 12
_INPUT_LINE = re.compile(r"(\w+) = fd\.define_tensor\((\[[-\d, ]*\]), dtype='(\w+)'\)(?:\s*# concrete: (\[[\d, ]*\]))?")


@dataclass
class Program:
    """A fusion as Python source, with what the harness needs to feed it."""

    world_size: int
    definition: list[str]
    """Lines inside `with FusionDefinition() as fd:`."""
    schedule: list[str]
    """Lines after it (meshes, splits, parallelization, allocation orders)."""
    inputs: list[tuple[str, tuple[int, ...], str]]
    """(variable, concrete global shape, dtype) of each fd.define_tensor, in order."""
    number_of_streams: int = 2
    rejected_calls: int = 0
    frontend_errors: list[str] = field(default_factory=list)
    """Exceptions other than FusionDefinitionError raised by the frontend while drawing."""

    def source(self) -> str:
        """The program as a user writes it; a dynamic input's line says its concrete shape."""
        concrete = {var: shape for var, shape, _ in self.inputs}
        definition = []
        for line in self.definition:
            match = _INPUT_LINE.match(line)
            if match and "-1" in match.group(2) and match.group(4) is None:
                line = f"{line}  # concrete: {list(concrete[match.group(1)])}"
            definition.append(line)
        return "\n".join(["with FusionDefinition() as fd:", *("    " + line for line in definition), *self.schedule])

    @property
    def op_count(self) -> int:
        return sum(" = fd.ops." in line for line in self.definition)




def program_from_source(source: str, world_size: int, number_of_streams: int = 2) -> Program:
    """A Program from source in the form `Program.source()` writes (a reproducer). A
    dynamic input needs its concrete shape in a comment: `... # concrete: [4, 8]`."""
    lines = [line for line in source.strip().splitlines() if line.strip()]
    assert lines[0].startswith("with FusionDefinition() as fd:"), "the source starts with the definition"
    definition = [line[4:] for line in lines[1:] if line.startswith("    ")]
    schedule = [line for line in lines[1:] if not line.startswith("    ")]
    inputs = []
    for line in definition:
        match = _INPUT_LINE.match(line)
        if match:
            shape = ast.literal_eval(match.group(4) or match.group(2))
            inputs.append((match.group(1), tuple(shape), match.group(3)))
    return Program(world_size, definition, schedule, inputs, number_of_streams)


def build(program: Program) -> tuple[FusionDefinition, dict]:
    """Execute the program's source: the FusionDefinition and every variable it named."""
    namespace = dict(API)
    exec(program.source(), namespace)  # noqa: S102 -- our own generated source
    return namespace["fd"], namespace


# --------------------------------------------------------------------------- #
# Drawing, one line at a time
# --------------------------------------------------------------------------- #


class _Writer:
    """Writes lines of a program, executing each; tracks tensors and their properties."""

    def __init__(self, draw, world_size: int):
        self.draw = draw
        self.world_size = world_size
        self.extents = EXTENTS[world_size]
        self.namespace = dict(API)
        exec("fd = FusionDefinition()\nfd.__enter__()", self.namespace)  # noqa: S102
        self.definition: list[str] = []
        self.schedule: list[str] = []
        self.inputs: list[tuple[str, tuple[int, ...], str]] = []
        self.tensors: list[str] = []
        self.exact: dict[str, bool] = {}
        self.count = 0
        self.rejected = 0
        self.frontend_errors: list[str] = []

    # -- lines ------------------------------------------------------------------
    def run(self, line: str, into: list[str]) -> bool:
        try:
            exec(line, self.namespace)  # noqa: S102
        except FusionDefinitionError:
            self.rejected += 1
            return False
        except Exception as error:  # noqa: BLE001 -- a frontend bug: report it, keep drawing
            self.frontend_errors.append(f"{line}: {type(error).__name__}: {error}")
            return False
        into.append(line)
        return True

    def op(self, expression: str, exact: bool = True) -> str | None:
        """`tN = <expression>` in the definition; the new variable, or None if rejected."""
        var = f"t{self.count}"
        self.count += 1
        if not self.run(f"{var} = {expression}", self.definition):
            return None
        self.tensors.append(var)
        self.exact[var] = exact
        return var

    def input(self, shape: tuple[int, ...], dtype: str) -> str | None:
        var = self.op(f"fd.define_tensor({list(shape)}, dtype={dtype!r})")
        if var is not None:
            self.inputs.append((var, tuple(shape), dtype))
        return var

    # -- queries ----------------------------------------------------------------
    def tensor(self, var: str):
        return self.namespace[var]

    def shape(self, var: str) -> tuple[int, ...]:
        return tuple(self.tensor(var).shape)

    def dtype(self, var: str) -> str:
        return self.tensor(var).dtype.value

    def pick(self, elements):
        return self.draw(st.sampled_from(list(elements)))

    def chance(self, p: float) -> bool:
        """True with probability about p (shrinks to False)."""
        return self.draw(st.integers(0, 99)) >= 100 - round(p * 100)

    @property
    def op_count(self) -> int:
        return sum(" = fd.ops." in line for line in self.definition)

    def operand(self, accept=lambda var: True) -> str | None:
        """A tensor drawn from those defined so far, the most recent first. Predicates
        are left out: the dialect accepts arithmetic on i1 that torch cannot compute."""
        candidates = [v for v in reversed(self.tensors) if self.dtype(v) != "bool" and accept(v)]
        return self.pick(candidates) if candidates else None


# --------------------------------------------------------------------------- #
# Ops
# --------------------------------------------------------------------------- #


def _is_float(w: _Writer, var: str) -> bool:
    return w.dtype(var) in FLOATS


def _scalar(w: _Writer, var: str, choices_float=(0.5, -1.5, 2.0, 0.25), choices_int=(2, -1, 3)) -> str:
    return repr(w.pick(choices_float if _is_float(w, var) else choices_int))


def _plus_abs(w: _Writer, var: str, offset: str) -> str | None:
    """abs(var) + offset: a value bounded away from zero."""
    a = w.op(f"fd.ops.abs({var})", w.exact[var])
    return None if a is None else w.op(f"fd.ops.add({a}, {offset})", w.exact[var])


def op_unary(w: _Writer, x: str) -> str | None:
    if not _is_float(w, x):
        return w.op(f"fd.ops.{w.pick(INTEGER_UNARY)}({x})", w.exact[x])
    function = w.pick(SAFE_UNARY + GUARDED_UNARY + ("gelu",))
    if function == "gelu":
        return w.op(f"fd.ops.gelu({x}, approximate={w.pick(('tanh', 'none'))!r})", w.exact[x])
    if function in GUARDED_UNARY:
        x = _plus_abs(w, x, "1.0")
        if x is None:
            return None
    return w.op(f"fd.ops.{function}({x})", w.exact[x])


def _second_operand(w: _Writer, x: str) -> str | None:
    """A tensor that broadcasts with x: x itself, a tensor of x's shape, or a new input of
    x's shape with some axes of extent 1."""
    shape, dtype = w.shape(x), w.dtype(x)
    kind = w.pick(("new", "same", "pool"))
    if kind == "same":
        return x
    if kind == "pool":
        found = w.operand(lambda v: v != x and w.shape(v) == shape and w.dtype(v) == dtype)
        if found is not None:
            return found
    new_shape = tuple(1 if e > 1 and w.chance(0.2) else e for e in shape)
    return w.input(new_shape, dtype)


def op_binary(w: _Writer, x: str) -> str | None:
    function = w.pick(ARITHMETIC)
    integer = not _is_float(w, x)
    if integer and function == "pow":
        return w.op(f"fd.ops.pow({x}, 2)", w.exact[x])
    form = w.pick(("tensor", "scalar", "scalar_lhs"))
    if form == "tensor":
        y = _second_operand(w, x)
        if y is None:
            return None
    else:
        y = _scalar(w, x)
    exact = w.exact[x] and w.exact.get(y, True)
    if function == "div":  # the divisor is abs(y) + 1
        if form == "tensor":
            y = _plus_abs(w, y, "1" if integer else "1.0")
            if y is None:
                return None
        elif form == "scalar_lhs":
            x = _plus_abs(w, x, "1" if integer else "1.0")
            if x is None:
                return None
    if function == "pow":  # the base is abs(.) + 0.5; the exponent is in [-1.5, 2]
        if form == "scalar_lhs":
            return w.op(f"fd.ops.pow({_scalar(w, x, (0.5, 2.0, 1.5))}, {x})", exact)
        x = _plus_abs(w, x, "0.5")
        if x is None:
            return None
    if form == "scalar_lhs":
        return w.op(f"fd.ops.{function}({y}, {x})", exact)
    return w.op(f"fd.ops.{function}({x}, {y})", exact)


def op_compare(w: _Writer, x: str) -> str | None:
    """A comparison of exact operands, cast back to x's type so arithmetic can go on."""
    if not w.exact[x]:
        return op_binary(w, x)
    y = _second_operand(w, x) if w.chance(0.5) else _scalar(w, x, (0.0, 0.25, -0.5), (0, 1, -1))
    if y is None or not w.exact.get(y, True):
        return None
    predicate = w.op(f"fd.ops.{w.pick(COMPARISONS)}({x}, {y})")
    return None if predicate is None else w.op(f"fd.ops.cast({predicate}, dtype={w.dtype(x)!r})")


def op_reduce(w: _Writer, x: str) -> str | None:
    rank = len(w.shape(x))
    kind = w.pick(REDUCTIONS)
    exact = w.exact[x] and kind in ("max", "min")
    if rank == 0:
        return None
    if w.chance(0.1):
        return w.op(f"fd.ops.{kind}({x})", exact)
    dims = sorted(w.draw(st.sets(st.integers(0, rank - 1), min_size=1, max_size=rank)))
    if w.chance(0.2):
        dims = [d - rank for d in dims]
    keepdim = ", keepdim=True" if w.chance(0.3) else ""
    return w.op(f"fd.ops.{kind}({x}, dims={dims}{keepdim})", exact)


def op_matmul(w: _Writer, x: str) -> str | None:
    shape, dtype = w.shape(x), w.dtype(x)
    if not shape:
        return None
    k = shape[-1]
    n = w.pick(w.extents[:-1])
    # [M, K] @ [K] crashes decompose-reshardings today (TRIAGE.md): rarer, so that it does
    # not hide the rest of the programs that contain one
    form = w.pick(("matrix", "matrix", "batched_b", "vector_a", "matrix", "batched_b", "vector_a", "vector_b"))
    if form == "vector_a" and len(shape) >= 2:  # [K] @ x[..., K, N]
        a = w.input((shape[-2],), dtype)
        return None if a is None else w.op(f"fd.ops.matmul({a}, {x})", False)
    if form == "vector_b":
        b_shape: tuple[int, ...] = (k,)
    elif form == "batched_b":
        batch = shape[:-2] if len(shape) >= 3 else (w.pick((2, 4)),)
        b_shape = (*batch, k, n)
    else:
        b_shape = (k, n)
    b = w.input(b_shape, dtype)
    return None if b is None else w.op(f"fd.ops.matmul({x}, {b})", False)


def op_linear(w: _Writer, x: str) -> str | None:
    shape, dtype = w.shape(x), w.dtype(x)
    if not shape:
        return None
    n = w.pick(w.extents[:-1])
    weight = w.input((n, shape[-1]), dtype)
    if weight is None:
        return None
    if w.chance(0.5):
        bias = w.input((n,), dtype)
        return None if bias is None else w.op(f"fd.ops.linear({x}, {weight}, bias={bias})", False)
    return w.op(f"fd.ops.linear({x}, {weight})", False)


def op_broadcast(w: _Writer, x: str) -> str | None:
    flags = [False] * len(w.shape(x))
    for _ in range(1 + w.chance(0.2)):
        flags.insert(w.draw(st.integers(0, len(flags))), True)
    return w.op(f"fd.ops.broadcast({x}, {flags})", w.exact[x])


def op_permute(w: _Writer, x: str) -> str | None:
    rank = len(w.shape(x))
    if rank < 2:
        return None
    dims = w.draw(st.permutations(range(rank)))
    return w.op(f"fd.ops.permute({x}, dims={list(dims)})", w.exact[x])


def op_reshape(w: _Writer, x: str) -> str | None:
    shape = list(w.shape(x))
    if not shape:
        return None
    form = w.pick(("flatten", "merge", "split"))
    if form == "merge" and len(shape) >= 2:
        i = w.draw(st.integers(0, len(shape) - 2))
        new = shape[:i] + [shape[i] * shape[i + 1]] + shape[i + 2:]
    elif form == "split":
        i = w.draw(st.integers(0, len(shape) - 1))
        factors = [f for f in range(2, shape[i]) if shape[i] % f == 0] or [1]
        f = w.pick(factors)
        new = shape[:i] + [f, shape[i] // f] + shape[i + 1:]
    else:
        new = [_product(shape)]
    if w.chance(0.5):
        new[w.draw(st.integers(0, len(new) - 1))] = -1
    return w.op(f"fd.ops.reshape({x}, {new})", w.exact[x])


def op_squeeze(w: _Writer, x: str) -> str | None:
    ones = [i for i, e in enumerate(w.shape(x)) if e == 1]
    if not ones:
        return op_broadcast(w, x)  # nothing to squeeze yet: make an axis to squeeze later
    dims = sorted(w.draw(st.sets(st.sampled_from(ones), min_size=1)))
    return w.op(f"fd.ops.squeeze({x}, dims={dims})", w.exact[x])


def op_slice(w: _Writer, x: str) -> str | None:
    shape = w.shape(x)
    if not shape:
        return None
    starts, stops, steps = [], [], []
    for extent in shape:
        if extent > 1 and w.chance(0.6):
            start = w.draw(st.integers(0, extent - 1))
            starts.append(start)
            stops.append(w.draw(st.integers(start + 1, extent)))
            steps.append(w.pick((1, 2, 3)))
        else:
            starts.append(0), stops.append(extent), steps.append(1)
    strides = f", {steps}" if any(s != 1 for s in steps) or w.chance(0.3) else ""
    return w.op(f"fd.ops.slice({x}, {starts}, {stops}{strides})", w.exact[x])


def op_select(w: _Writer, x: str) -> str | None:
    shape = w.shape(x)
    if not shape:
        return None
    dim = w.draw(st.integers(0, len(shape) - 1))
    index = w.draw(st.integers(0, max(shape[dim] - 1, 0)))
    return w.op(f"fd.ops.select({x}, {index}, dim={dim})", w.exact[x])


def op_cast(w: _Writer, x: str) -> str | None:
    options = [d for d in FLOATS if d != w.dtype(x)]
    if w.exact[x] and _is_float(w, x):
        options.append("int64")  # truncation is exact only on exact values
    return w.op(f"fd.ops.cast({x}, dtype={w.pick(options)!r})", w.exact[x])


def op_set(w: _Writer, x: str) -> str | None:
    return w.op(f"fd.ops.set({x})", w.exact[x])


def op_cat(w: _Writer, x: str) -> str | None:
    shape = w.shape(x)
    if not shape:
        return None
    dim = w.draw(st.integers(0, len(shape) - 1))
    other = list(shape)
    other[dim] = w.pick(w.extents)
    y = w.input(tuple(other), w.dtype(x))
    return None if y is None else w.op(f"fd.ops.cat([{x}, {y}], dim={dim})", w.exact[x])


def op_expand(w: _Writer, x: str) -> str | None:
    """broadcast_in_dim: a new axis (or an axis of extent 1) expanded to an extent above 1."""
    shape = list(w.shape(x))
    at = w.draw(st.integers(0, len(shape)))
    target = shape[:at] + [w.pick(w.extents[:-1])] + shape[at:]
    kept = [i for i in range(len(target)) if i != at]
    return w.op(f"fd.ops.broadcast_in_dim({x}, shape={target}, broadcast_dims={kept})", w.exact[x])


def op_where(w: _Writer, x: str) -> str | None:
    if not w.exact[x]:
        return None
    predicate = w.op(f"fd.ops.{w.pick(COMPARISONS)}({x}, {_scalar(w, x, (0.0, 0.25), (0, 1))})")
    if predicate is None:
        return None
    other = _second_operand(w, x) if w.chance(0.5) else _scalar(w, x)
    return None if other is None else w.op(f"fd.ops.where({predicate}, {x}, {other})", w.exact[x] and w.exact.get(other, True))


def op_positional(w: _Writer, x: str) -> str | None:
    """triu, or x combined with a seeded uniform tensor or an iota along its last axis."""
    shape = w.shape(x)
    form = w.pick(("triu", "uniform", "iota"))
    if form == "triu":
        return w.op(f"fd.ops.triu({x}, {w.pick((0, 1, -1))})", w.exact[x]) if len(shape) >= 2 else None
    if not _is_float(w, x) or not shape:
        return None
    if form == "uniform":
        made = w.op(f"fd.ops.uniform(-1.0, 1.0, {list(shape)}, rng_seed={w.pick((1, 7))}, rng_offset={w.pick((0, 5))}, "
                    f"dtype={w.dtype(x)!r})")
    else:
        flags = [True] * (len(shape) - 1) + [False]
        iota = w.op(f"fd.ops.iota({shape[-1]}, 1, 1, dtype={w.dtype(x)!r})")
        made = None if iota is None else w.op(f"fd.ops.broadcast({iota}, {flags})")
    return None if made is None else w.op(f"fd.ops.mul({x}, {made})", w.exact[x])


def op_statistics(w: _Writer, x: str) -> str | None:
    shape = w.shape(x)
    if not shape or not _is_float(w, x):
        return None
    dims = sorted(w.draw(st.sets(st.integers(0, len(shape) - 1), min_size=1, max_size=len(shape))))
    var = f"t{w.count}"
    w.count += 1
    keepdim = w.chance(0.3)
    if not w.run(f"{var}, {var}_mean = fd.ops.var_mean({x}, dims={dims}, correction={w.pick((0, 1))}, keepdim={keepdim})",
                 w.definition):
        return None
    for name in (var, f"{var}_mean"):
        w.tensors.append(name)
        w.exact[name] = False
    return var


def op_grouped_mm(w: _Writer, x: str) -> str | None:
    """[M, K] x [G, K, N] with M in equal groups, offsets made by iota (inputs are values in
    [-1, 1), no offsets); x of another rank is flattened to [M, K] first."""
    shape = w.shape(x)
    if not shape or not _is_float(w, x):
        return None
    if len(shape) != 2:
        x = w.op(f"fd.ops.reshape({x}, [{_product(shape[:-1])}, {shape[-1]}])", w.exact[x])
        if x is None:
            return None
    m, k = w.shape(x)
    groups = [g for g in (2, 4, 3) if m % g == 0]
    if not groups:
        return None
    g = w.pick(groups)
    b = w.input((g, k, w.pick(w.extents[:-1])), w.dtype(x))
    offsets = w.op(f"fd.ops.iota({g}, {m // g}, {m // g}, dtype='int32')")
    return None if b is None or offsets is None else w.op(f"fd.ops.grouped_mm({x}, {b}, {offsets})", False)


def op_attention(w: _Writer, x: str) -> str | None:
    """Causal or not attention of x [.., H, L, E] (a matrix gets one head) over two new
    inputs, and its backward (without dropout: its default seed follows torch's in each
    process)."""
    if len(w.shape(x)) == 2:
        x = w.op(f"fd.ops.broadcast({x}, [True, False, False])", w.exact[x])
    shape = w.shape(x) if x is not None else ()
    if len(shape) < 3 or not _is_float(w, x):
        return None
    k, v = (w.input(shape, w.dtype(x)) for _ in range(2))
    if k is None or v is None:
        return None
    names = [f"t{w.count + i}" for i in range(4)]
    w.count += 4
    causal = w.pick((True, False))
    if not w.run(f"{', '.join(names)} = fd.ops.sdpfa_fwd({x}, {k}, {v}, is_causal={causal})", w.definition):
        return None
    out, logsumexp = names[:2]
    for name in (out, logsumexp):
        w.tensors.append(name)
        w.exact[name] = False
    if not w.chance(0.5):
        return out
    grad = w.input(shape, w.dtype(x))
    grads = [f"t{w.count + i}" for i in range(3)]
    w.count += 3
    if grad is None or not w.run(f"{', '.join(grads)} = fd.ops.sdpfa_bwd({grad}, {x}, {k}, {v}, {out}, {logsumexp}, "
                                 f"0.0, {causal}, {names[2]}, {names[3]})", w.definition):
        return out
    for name in grads:
        w.tensors.append(name)
        w.exact[name] = False
    return grads[0]


def op_stacked_linear(w: _Writer, x: str) -> str | None:
    """A linear with a stack of weights, of an input of rank <= 2 (the one a device-parallel
    K is lowered for)."""
    shape = w.shape(x)
    if not shape or len(shape) > 2:
        return None
    stack, n = w.pick((2, 3)), w.pick(w.extents[:-1])
    weight = w.input((stack, n, shape[-1]), w.dtype(x))
    if weight is None:
        return None
    if w.chance(0.5):
        bias = w.input((stack, n), w.dtype(x))
        return None if bias is None else w.op(f"fd.ops.linear({x}, {weight}, {bias})", False)
    return w.op(f"fd.ops.linear({x}, {weight})", False)


OPS = {
    "unary": op_unary, "binary": op_binary, "compare": op_compare, "reduce": op_reduce,
    "matmul": op_matmul, "linear": op_linear, "broadcast": op_broadcast, "permute": op_permute,
    "reshape": op_reshape, "squeeze": op_squeeze, "slice": op_slice, "select": op_select,
    "cast": op_cast, "set": op_set,
}
PARITY_OPS = {
    "cat": op_cat, "expand": op_expand, "where": op_where, "positional": op_positional, "statistics": op_statistics,
    "grouped_mm": op_grouped_mm, "attention": op_attention, "stacked_linear": op_stacked_linear,
}
"""The ops of nvFuser's multi-device tests. Random numbers are seeded: a default seed
follows torch's in each process, and the harness's and the ranks' differ."""


def op_parity(w: _Writer, x: str) -> str | None:
    return PARITY_OPS[w.pick(PARITY_OPS)](w, x)


OPS["parity"] = op_parity


def _product(values) -> int:
    total = 1
    for v in values:
        total *= v
    return total


# --------------------------------------------------------------------------- #
# Schedules
# --------------------------------------------------------------------------- #

MAIN_MESHES = {1: ("None", "[0]"), 2: ("[0, 1]",), 3: ("[0, 1, 2]",), 4: ("[0, 1, 2, 3]", "[[0, 1], [2, 3]]"),
               5: ("[0, 1, 2, 3, 4]",), 6: ("[0, 1, 2, 3, 4, 5]", "[[0, 1, 2], [3, 4, 5]]"),
               8: ("[0, 1, 2, 3, 4, 5, 6, 7]", "[[0, 1, 2, 3], [4, 5, 6, 7]]", "[[[0, 1], [2, 3]], [[4, 5], [6, 7]]]")}
OTHER_MESHES = {1: ("[0]",), 2: ("[1, 0]", "[0]", "[1]"), 3: ("[0, 1]", "[1, 2]", "[2, 0, 1]", "[1]"), 4: ("[0, 1]", "[2, 3]", "[1, 2]", "[0]", "[[0, 1], [2, 3]]",
                                                             "[[[0, 1]], [[2, 3]]]",
                                                             "[0, 1, 2, 3]"),
                5: ("[0, 1]", "[1, 2, 3, 4]", "[4, 0, 1, 2, 3]", "[2]", "[[0, 1], [2, 3]]"),
                6: ("[0, 1, 2]", "[3, 4, 5]", "[[0, 1], [2, 3], [4, 5]]", "[1]", "[0, 1, 2, 3, 4, 5]"),
                8: ("[0, 1, 2, 3]", "[4, 5, 6, 7]", "[[0, 1], [2, 3]]", "[0]", "[[0, 1, 2, 3], [4, 5, 6, 7]]",
                    "[7, 6, 5, 4, 3, 2, 1, 0]")}
"""The meshes a program of each world size is drawn on (WORLD_SIZES: those there are)."""
WORLD_SIZES = tuple(MAIN_MESHES)


def _mesh_axes(mesh: str) -> list[tuple[str, int]]:
    """(parallel type, devices along it) for a mesh literal; DIDx is the last mesh axis,
    DIDy the one before, DIDz the one before that."""
    value = eval(mesh)  # noqa: S307 -- one of our literals above
    sizes = []
    while isinstance(value, list):
        sizes.append(len(value))
        value = value[0] if value else None
    return list(zip(("DIDx", "DIDy", "DIDz"), reversed(sizes)))


def _serial_axes(w: _Writer, var: str, divisible_by: int) -> list[int]:
    loop = w.tensor(var).loop_domain
    return [i for i, axis in enumerate(loop)
            if axis.parallel_type == ParallelType.Serial and axis.extent > 0 and axis.extent % divisible_by == 0]


def schedule_device_axis(w: _Writer, var: str, parallel: str, devices: int) -> None:
    """Shard one loop axis over `devices`: split it by the device count (or take it whole
    when its extent is the device count), then parallelize the outer piece."""
    candidates = _serial_axes(w, var, devices)
    if w.chance(0.03):  # now and then an axis the split does not divide: the frontend refuses
        candidates = _serial_axes(w, var, 1)
    if not candidates:
        return
    i = w.pick(candidates)
    if w.tensor(var).loop_domain[i].extent != devices or w.chance(0.5):
        if not w.run(f"{var}.outer_split({i}, {devices})", w.schedule):
            return
    w.run(f"{var}.axis({i}).parallelize(ParallelType.{parallel})", w.schedule)


def schedule_stream_axis(w: _Writer, var: str) -> None:
    candidates = [i for i in _serial_axes(w, var, 1) if w.tensor(var).loop_domain[i].extent > 1]
    if not candidates:
        return
    i = w.pick(candidates)
    extent = w.tensor(var).loop_domain[i].extent
    factors = [f for f in range(2, extent) if extent % f == 0]
    if factors and w.chance(0.2):
        if not w.run(f"{var}.outer_split({i}, {w.pick(factors)})", w.schedule):
            return
    w.run(f"{var}.axis({i}).parallelize(ParallelType.Stream)", w.schedule)


ANNOTATION_STYLES = ("inputs", "inputs_outputs", "all", "sparse", "inputs_outputs")
"""Which tensors get a mesh and parallel types; propagate-shardings gives the others theirs
(it never changes a tensor that has a mesh, so annotating everything would bypass it)."""


def _annotated(w: _Writer, style: str, is_input: bool, is_output: bool) -> bool:
    if style == "sparse":
        return w.chance(0.3)
    return style == "all" or is_input or (style == "inputs_outputs" and is_output)


def schedule_tensor(w: _Writer, var: str, main_mesh: str, annotated: bool, is_input: bool, mixed_meshes: bool,
                    streams: bool) -> None:
    """The program's mesh; in programs with `mixed_meshes` now and then another one, or
    none (the passes refuse some tensors with a mesh and some without)."""
    roll = w.draw(st.integers(0, 99)) if mixed_meshes else 0
    mesh = main_mesh if roll < 70 else ("None" if roll >= 90 else w.pick(OTHER_MESHES[w.world_size]))
    if not annotated:
        mesh, streams = "None", False
    if mesh != "None":
        w.run(f"{var}.set_device_mesh({'mesh' if mesh == main_mesh else f'DeviceMesh({mesh})'})", w.schedule)
        for parallel, devices in _mesh_axes(mesh):
            if w.chance(0.6):
                schedule_device_axis(w, var, parallel, devices)
    if streams and not is_input and w.chance(0.3):
        schedule_stream_axis(w, var)
    if w.chance(0.2):
        axes = len(w.tensor(var).type.axes)  # logical axes, reduction axes included
        if axes >= 2:
            w.run(f"{var}.set_allocation_order({list(w.draw(st.permutations(range(axes))))})", w.schedule)


# --------------------------------------------------------------------------- #
# Programs
# --------------------------------------------------------------------------- #


def _draw_dtype(w: _Writer) -> str:
    roll = w.draw(st.integers(0, 99))
    if roll < 75:
        return "float32"
    return ("float64", "bfloat16", "float16", "int64", "int32")[(roll - 75) // 5]


def _draw_definition(w: _Writer) -> list[str]:
    """The definition's lines; returns the outputs."""
    dtype = _draw_dtype(w)
    for _ in range(1 + w.chance(0.3)):
        rank = w.pick((2, 2, 1, 3))
        w.input(tuple(w.pick(w.extents) for _ in range(rank)), dtype)
    target = w.draw(st.integers(1, MAX_OPS))
    attempts = 0
    while w.op_count < target and attempts < 3 * MAX_OPS and w.tensors:
        attempts += 1
        x = w.operand()
        OPS[w.pick(OP_KINDS)](w, x)
    results = [v for v in w.tensors if v not in {name for name, _, _ in w.inputs}] or w.tensors[-1:]
    outputs = [results[-1]] + [v for v in results[:-1] if w.chance(0.15)][:2]
    return [var for var in outputs if w.run(f"fd.add_output({var})", w.definition)]


def _make_some_inputs_dynamic(w: _Writer, program: Program) -> Program:
    """Declare extents of inputs -1: in a share of programs every extent above 1 of every
    input (whole shapes dynamic, as nvFuser's tests declare theirs; extent-1 axes are the
    operands' broadcast axes), else now and then one extent of an input. A change is kept
    only if the whole program still builds."""
    if w.chance(0.25):
        whole = _with_dynamic_axes(program, {var: [i for i, e in enumerate(shape) if e > 1]
                                             for var, shape, _ in program.inputs})
        if whole is not None:
            return whole
    for var, shape, _ in program.inputs:
        axes = [i for i, e in enumerate(shape) if e > 1]
        if axes and w.chance(0.1):
            program = _with_dynamic_axes(program, {var: [w.pick(axes)]}) or program
    return program


def _with_dynamic_axes(program: Program, axes_of: dict[str, list[int]]) -> Program | None:
    """`program` with these axes of its inputs (by variable) declared -1, if it still builds."""
    definition = list(program.definition)
    for var, shape, dtype in program.inputs:
        axes = axes_of.get(var)
        if not axes:
            continue
        declared = [-1 if i in axes else e for i, e in enumerate(shape)]
        old = f"{var} = fd.define_tensor({list(shape)}, dtype={dtype!r})"
        new = f"{var} = fd.define_tensor({declared}, dtype={dtype!r})"
        definition = [new if line == old else line for line in definition]
    candidate = Program(**{**program.__dict__, "definition": definition})
    try:
        build(candidate)[0].to_module()
    except Exception:  # noqa: BLE001 -- the program stays as it was
        return None
    return candidate


@st.composite
def programs(draw, world_sizes=(1, 2, 4)) -> Program:
    """A random fusion for a world size drawn from `world_sizes`."""
    # multi-rank programs are where communication happens: twice as likely as one rank
    world_size = draw(st.sampled_from([w for w in world_sizes for _ in range(1 if w == 1 else 2)]))
    w = _Writer(draw, world_size)
    outputs = _draw_definition(w)
    w.run("fd.__exit__(None, None, None)", [])
    main_mesh = w.pick(MAIN_MESHES[world_size])
    if main_mesh != "None":
        w.run(f"mesh = DeviceMesh({main_mesh})", w.schedule)
    input_names = {name for name, _, _ in w.inputs}
    style, mixed_meshes, streams = w.pick(ANNOTATION_STYLES), w.chance(0.2), w.chance(0.35)
    for var in list(w.tensors):
        annotated = _annotated(w, style, var in input_names, var in outputs)
        schedule_tensor(w, var, main_mesh, annotated, var in input_names, mixed_meshes, streams)
    program = Program(world_size, w.definition, w.schedule, w.inputs,
                      number_of_streams=draw(st.sampled_from((2, 1, 3))), rejected_calls=w.rejected,
                      frontend_errors=w.frontend_errors)
    return _make_some_inputs_dynamic(w, program)


# --------------------------------------------------------------------------- #
# Tensor-parallel pipelines: what the lowering options (transport, bounded
# intermediates, CUDA graphs, chunk counts) exist for
# --------------------------------------------------------------------------- #

CHUNKS = (1, 2, 3, 4, 8)
"""Stream chunk counts S of a pipeline (1: not pipelined)."""
PIPELINE_DTYPES = ("float32", "bfloat16")


def _unit_chain(w: _Writer, x: str) -> str:
    """1 to 3 elementwise ops after a matmul (a kernel unit), gelu, or tanh-gelu written
    out as users write it without a gelu op."""
    if w.chance(0.25):
        return w.op(f"fd.ops.gelu({x}, approximate='tanh')", False) or x
    if w.chance(0.25):
        cube = w.op(f"fd.ops.mul(fd.ops.mul({x}, {x}), {x})", False)
        inner = w.op(f"fd.ops.mul(fd.ops.add({x}, fd.ops.mul({cube}, 0.044715)), 0.7978845608)", False)
        return w.op(f"fd.ops.mul(fd.ops.mul({x}, 0.5), fd.ops.add(fd.ops.tanh({inner}), 1.0))", False) or x
    for _ in range(w.draw(st.integers(1, 3))):
        function = w.pick(("relu", "tanh", "sigmoid", "silu", "neg", "scale", "shift"))
        expression = {"scale": f"fd.ops.mul({x}, 0.5)", "shift": f"fd.ops.add({x}, -0.25)"}.get(
            function, f"fd.ops.{function}({x})")
        x = w.op(expression, False) or x
    return x


def _stream_and_split(w: _Writer, var: str, chunks: int, sharded_axis: int | None, devices: int) -> None:
    """Stream on axis 0 (when pipelined) and DIDx on a split of `sharded_axis`."""
    if chunks > 1:
        w.run(f"{var}.axis(0).parallelize(ParallelType.Stream)", w.schedule)
    _shard(w, var, sharded_axis, devices)


def _shard(w: _Writer, var: str, axis: int | None, devices: int) -> None:
    """DIDx on the outer piece of loop axis `axis` split over the devices."""
    if axis is not None and devices > 1:
        w.run(f"{var}.outer_split({axis}, {devices})", w.schedule)
        w.run(f"{var}.axis({axis}).parallelize(ParallelType.DIDx)", w.schedule)


def _split_rows(w: _Writer, var: str, chunks: int, devices: int, stream: bool, shard: bool) -> int:
    """The rows `[S*D*m]` of a sequence-parallel tensor as nvFuser's overlap tests split
    them: S chunks outermost (Stream on them with `stream`), then the devices (DIDx with
    `shard`). Returns the loop axis the next logical axis starts at."""
    first = 0
    if chunks > 1:
        w.run(f"{var}.outer_split(0, {chunks})", w.schedule)
        if stream:
            w.run(f"{var}.axis(0).parallelize(ParallelType.Stream)", w.schedule)
        first = 1
    if shard and devices > 1:
        _shard(w, var, first, devices)
        return first + 2
    return first + 1


@st.composite
def pipelines(draw, world_sizes=(1, 2)) -> Program:
    """A stream-pipelined tensor-parallel block as nvFuser's tests write it: X `[S, D, m,
    H]` all-gathered on its D axis (or replicated), a matmul with a column-sharded W1, a
    kernel unit of elementwise ops, then optionally a matmul with a row-sharded W2 whose
    partial sums are reduce-scattered on the D axis or all-reduced, and optionally a
    residual add; beside it, in some, an independent row-parallel matmul of an input
    `[S, D, m, F]` reduce-scattered or all-reduced like the first (the attention
    projections' form). The Stream axis has S chunks (not pipelined when S = 1). A third
    of them spell the chunks as nvFuser's overlap tests do: X `[S*D*m, H]`, its rows split
    in S chunks (Stream on that piece) and then over the devices. A fifth are the
    row-parallel matmul alone (`_row_parallel_block`)."""
    world_size = draw(st.sampled_from(tuple(world_sizes)))
    w = _Writer(draw, world_size)
    d, chunks, dtype = world_size, w.pick(CHUNKS), w.pick(PIPELINE_DTYPES)
    rows, hidden, ffn = w.pick((2, 4)), w.pick((4, 8)), d * w.pick((2, 4))
    if w.chance(0.2):
        return _row_parallel_block(w, chunks, rows, ffn, hidden, dtype)
    gathers, second, scatters, residual = w.chance(0.7), w.chance(0.7), w.chance(0.5), w.chance(0.3)
    split_rows = w.chance(0.33)
    shape = (chunks * d * rows, hidden) if split_rows else (chunks, d, rows, hidden)
    x = w.input(shape, dtype)
    w1 = w.input((hidden, ffn), dtype)
    g = w.op(f"fd.ops.matmul({x}, {w1})", False)
    t = _unit_chain(w, g)
    unit = w.tensors[w.tensors.index(g):]  # g, the unit's values, t: [S, D, m, F]
    outputs, w2, r = [t], None, None
    if second:
        w2 = w.input((ffn, hidden), dtype)
        outputs = [w.op(f"fd.ops.matmul({t}, {w2})", False)]
        if residual:
            r = w.input(shape, dtype)
            outputs.append(w.op(f"fd.ops.add({outputs[0]}, {r})", False))
    w.run(f"fd.add_output({outputs[-1]})", w.definition)
    # Beside it, as the attention projections sit beside each other: an independent
    # row-parallel matmul of its own input, in the same stream loop (two chains whose
    # posts and waits schedule-communication interleaves).
    beside = _row_parallel_matmul(w, chunks, rows, ffn, hidden, dtype) if not split_rows and w.chance(0.3) else None
    _on_one_mesh(w)
    _stream_and_split(w, w1, 1, 1, d)
    if second:
        _stream_and_split(w, w2, 1, 0, d)
    if beside:
        _shard_row_parallel(w, beside, chunks, scatters)
    ends = outputs + ([r] if r is not None else []) if second else []
    if split_rows:
        _split_rows(w, x, chunks, d, stream=False, shard=gathers)
        for var in unit:
            _shard(w, var, _split_rows(w, var, chunks, d, stream=True, shard=False), d)
        for var in ends:
            _split_rows(w, var, chunks, d, stream=var != r, shard=scatters)
    else:
        if gathers and d > 1:
            w.run(f"{x}.axis(1).parallelize(ParallelType.DIDx)", w.schedule)
        for var in unit:
            _stream_and_split(w, var, chunks, 3, d)
        for var in ends:
            _stream_and_split(w, var, chunks if var != r else 1, None, d)
            if scatters and d > 1:
                w.run(f"{var}.axis(1).parallelize(ParallelType.DIDx)", w.schedule)
    return _program(w)


def _row_parallel_block(w: _Writer, chunks: int, rows: int, ffn: int, hidden: int, dtype: str) -> Program:
    """A row-parallel matmul alone, as an attention output projection runs: `[S, D, m, F]`
    with F sharded, a row-sharded W, the partial sums all-reduced or reduce-scattered on the
    D axis; a stream loop that computes and then only sends (order-chunk-compute's)."""
    scatters = w.chance(0.5)
    block = _row_parallel_matmul(w, chunks, rows, ffn, hidden, dtype)
    _on_one_mesh(w)
    _shard_row_parallel(w, block, chunks, scatters)
    return _program(w)


def _row_parallel_matmul(w: _Writer, chunks: int, rows: int, ffn: int, hidden: int, dtype: str) -> tuple[str, str, str]:
    """o = a @ wo, a fusion output: a `[S, D, m, F]`, wo `[F, H]`."""
    a, wo = w.input((chunks, w.world_size, rows, ffn), dtype), w.input((ffn, hidden), dtype)
    o = w.op(f"fd.ops.matmul({a}, {wo})", False)
    w.run(f"fd.add_output({o})", w.definition)
    return a, wo, o


def _shard_row_parallel(w: _Writer, block: tuple[str, str, str], chunks: int, scatters: bool) -> None:
    """F sharded (a's last axis, wo's first), o streamed and, with `scatters`, reduce-scattered on its D axis."""
    a, wo, o = block
    d = w.world_size
    _stream_and_split(w, a, 1, 3, d)
    _stream_and_split(w, wo, 1, 0, d)
    _stream_and_split(w, o, chunks, None, d)
    if scatters and d > 1:
        w.run(f"{o}.axis(1).parallelize(ParallelType.DIDx)", w.schedule)


def _on_one_mesh(w: _Writer) -> None:
    """Close the definition; every tensor on the mesh of all the devices."""
    w.run("fd.__exit__(None, None, None)", [])
    w.run(f"mesh = DeviceMesh({list(range(w.world_size))})", w.schedule)
    for var in w.tensors:
        w.run(f"{var}.set_device_mesh(mesh)", w.schedule)


def _program(w: _Writer) -> Program:
    return Program(w.world_size, w.definition, w.schedule, w.inputs, number_of_streams=w.pick((1, 2, 3, 4)),
                   rejected_calls=w.rejected, frontend_errors=w.frontend_errors)
