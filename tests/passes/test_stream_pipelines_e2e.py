"""End to end: stream-pipelined fusions lowered by the whole pipeline compute what the eager
fusion computes on unsharded data (nvFuser's tests/cpp/test_host_ir_stream_lowering.cpp and
test_multidevice_stream_parallel_type.cpp, issue 5).

Single-device cases run in this process; the multi-device collective pipelines run on two
CPU ranks (gloo; streams are bookkeeping there), all jobs in one launch. Each case runs for
numberOfStreams in {1, 2, 4} and stream extents that are (4) and are not (3, 6) multiples
of it. Tolerance: float32 with small sums, rtol=atol=1e-5.
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass

import pytest
import torch
import torch.distributed as dist

from hostir import runtime
from hostir.passes import build_passes, run_passes
from hostir.runtime.graphs import CUDA_GRAPH
from hostir.runtime.launcher import Job, device_for, launch, run_spmd_batch
from hostir_dialect import hir
from hostir_dialect.context import make_context, parse_module
from hostir_dialect.tensor_type import TensorType

PIPELINE = "hostir-lower{transport=nccl}"
"""Every collective on NCCL and every Stream pipeline as written (no cost model)."""
COPY_ENGINE = "hostir-lower{transport=copy-engine}"
"""By default, both all-reduce options: an all-reduce of a matmul computes the own part
(`own` operands) in place onto the part its lead pushed into the symmetric output."""
COPY_ENGINE_SYMMETRIC_OUTPUT = "hostir-lower{transport=copy-engine reduce-in-producer=false}"
"""All-reduces pushing into symmetric outputs (returned ones: result sets, runtime/result_sets.py),
their producers computing every part before the post."""
COPY_ENGINE_REDUCE_IN_PRODUCER = "hostir-lower{transport=copy-engine symmetric-allreduce-output=false}"
"""All-reduces of a matmul computing the own part onto the others' (`own` operands), into
an output of their own."""
COPY_ENGINE_PLAIN_ALLREDUCE = (
    "hostir-lower{transport=copy-engine reduce-in-producer=false symmetric-allreduce-output=false}")
"""Neither all-reduce option: the producer computes every part, phase 2 copies out of `via`."""
AUTO = "hostir-lower{transport=auto}"
"""The cost model decides: at these toy sizes choose-pipelining runs every program whole."""
BOUNDED = (
    "propagate-shardings,decompose-reshardings,reorder-sharded-axis,finalize-multidevice-domains,lower-to-host,"
    "stream-parallel-type{bounded-intermediates=true},convert-op-to-communication,insert-deallocations"
)
COPY_ENGINE_BOUNDED = "hostir-lower{transport=copy-engine bounded-intermediates=true}"
COPY_ENGINE_RS_IN_PRODUCER = "hostir-lower{transport=copy-engine reduce-scatter-in-producer=true}"
"""Reduce-scatters of a matmul computing the own part onto the lead's, pushed into their
output (made symmetric for it)."""
COPY_ENGINE_BOUNDED_RS_IN_PRODUCER = (
    "hostir-lower{transport=copy-engine bounded-intermediates=true reduce-scatter-in-producer=true}")
WITHOUT_REDUCE_IN_PRODUCER = (COPY_ENGINE_SYMMETRIC_OUTPUT, COPY_ENGINE_PLAIN_ALLREDUCE)
COPY_ENGINE_PIPELINES = (COPY_ENGINE, COPY_ENGINE_BOUNDED, COPY_ENGINE_REDUCE_IN_PRODUCER, *WITHOUT_REDUCE_IN_PRODUCER,
                         COPY_ENGINE_RS_IN_PRODUCER, COPY_ENGINE_BOUNDED_RS_IN_PRODUCER)
AG_AFTER = (
    "propagate-shardings,decompose-reshardings{insert-after=true},reorder-sharded-axis,finalize-multidevice-domains,"
    "lower-to-host,stream-parallel-type,convert-op-to-communication,insert-deallocations"
)
STREAM_COUNTS = (1, 2, 4)
EXTENTS = (3, 4, 6)
TOLERANCE = {"rtol": 1e-5, "atol": 1e-5}


def t(shape: str, devices: int = 0) -> str:
    """The f32 tensor type of `shape`, on a mesh of `devices` devices (none if 0)."""
    mesh = f", mesh=[{', '.join(map(str, range(devices)))}]" if devices else ""
    return f"!fusion.tensor<f32[{shape}]{mesh}>"


# --------------------------------------------------------------------------- #
# Single-device fusions (HirLowerStreamTest), S = the stream extent
# --------------------------------------------------------------------------- #


def single_set(s: int) -> str:
    return f"""fusion.func @f(%a: {t(f'{s}, 8')}) -> {t(f'{s} stream, 8')} {{
  %b = fusion.set %a : {t(f'{s}, 8')} -> {t(f'{s} stream, 8')}
  fusion.return %b : {t(f'{s} stream, 8')}
}}"""


def non_outermost(s: int) -> str:
    return f"""fusion.func @f(%a: {t(f'4, {s}')}) -> {t(f'4, {s} stream')} {{
  %b = fusion.set %a : {t(f'4, {s}')} -> {t(f'4, {s} stream')}
  fusion.return %b : {t(f'4, {s} stream')}
}}"""


def binary(s: int) -> str:
    return f"""fusion.func @f(%a: {t(f'{s}, 4')}, %b: {t(f'{s}, 4')}) -> {t(f'{s} stream, 4')} {{
  %c = fusion.add %a, %b : {t(f'{s}, 4')}, {t(f'{s}, 4')} -> {t(f'{s} stream, 4')}
  fusion.return %c : {t(f'{s} stream, 4')}
}}"""


def two_sets(s: int) -> str:
    return f"""fusion.func @f(%a: {t(f'{s}, 8')}) -> {t(f'{s} stream, 8')} {{
  %b = fusion.mul %a, %a : {t(f'{s}, 8')}, {t(f'{s}, 8')} -> {t(f'{s} stream, 8')}
  %c = fusion.add %b, %a : {t(f'{s} stream, 8')}, {t(f'{s}, 8')} -> {t(f'{s} stream, 8')}
  fusion.return %c : {t(f'{s} stream, 8')}
}}"""


def three_sets(s: int) -> str:
    return f"""fusion.func @f(%a: {t(f'{s}, 8')}) -> {t(f'{s} stream, 8')} {{
  %b = fusion.mul %a, %a : {t(f'{s}, 8')}, {t(f'{s}, 8')} -> {t(f'{s} stream, 8')}
  %c = fusion.add %b, %a : {t(f'{s} stream, 8')}, {t(f'{s}, 8')} -> {t(f'{s}, 8')}
  %d = fusion.sub %c, %a : {t(f'{s}, 8')}, {t(f'{s}, 8')} -> {t(f'{s} stream, 8')}
  fusion.return %d : {t(f'{s} stream, 8')}
}}"""


def reduction(s: int) -> str:
    return f"""fusion.func @f(%a: {t(f'{s}, 8, 2')}) -> {t(f'{s} stream, 8, r2')} {{
  %b = fusion.reduce sum %a dims [2] : {t(f'{s}, 8, 2')} -> {t(f'{s} stream, 8, r2')}
  fusion.return %b : {t(f'{s} stream, 8, r2')}
}}"""


def matmul_m(s: int) -> str:
    return f"""fusion.func @f(%a: {t(f'{s}, 4')}, %b: {t('4, 2')}) -> {t(f'{s} stream, 2, r4')} {{
  %c = fusion.matmul %a, %b : {t(f'{s}, 4')}, {t('4, 2')} -> {t(f'{s} stream, 2, r4')}
  fusion.return %c : {t(f'{s} stream, 2, r4')}
}}"""


def batched_matmul(s: int) -> str:
    return f"""fusion.func @f(%a: {t(f'{s}, 8, 4')}, %b: {t('4, 2')}) -> {t(f'{s} stream, 8, 2, r4')} {{
  %c = fusion.matmul %a, %b : {t(f'{s}, 8, 4')}, {t('4, 2')} -> {t(f'{s} stream, 8, 2, r4')}
  fusion.return %c : {t(f'{s} stream, 8, 2, r4')}
}}"""


def matmul_n(s: int) -> str:
    return f"""fusion.func @f(%a: {t('8, 4')}, %b: {t(f'4, {s}')}) -> {t(f'8, {s} stream, r4')} {{
  %c = fusion.matmul %a, %b : {t('8, 4')}, {t(f'4, {s}')} -> {t(f'8, {s} stream, r4')}
  fusion.return %c : {t(f'8, {s} stream, r4')}
}}"""


def broadcast_operand(s: int) -> str:
    return f"""fusion.func @f(%a: {t(f'{s}, 8')}, %b: {t('b1, 8')}) -> {t(f'{s} stream, 8')} {{
  %c = fusion.add %a, %b : {t(f'{s}, 8')}, {t('b1, 8')} -> {t(f'{s} stream, 8')}
  fusion.return %c : {t(f'{s} stream, 8')}
}}"""


def mlp(s: int) -> str:
    """An intermediate (%h) only read inside the loop: bounded-intermediates' target."""
    x, h, y = t(f'{s}, 4, 16'), t(f'{s} stream, 4, 32, r16'), t(f'{s} stream, 4, r32')
    return f"""fusion.func @f(%x: {x}, %w: {t('16, 32')}) -> {y} {{
  %h = fusion.matmul %x, %w : {x}, {t('16, 32')} -> {h}
  %y = fusion.reduce sum %h dims [2] : {h} -> {y}
  fusion.return %y : {y}
}}"""


def unit_feeds_matmul(s: int) -> str:
    """relu -> matmul(Stream): the relu kernel unit is computed chunk by chunk in the loop."""
    return f"""fusion.func @f(%a: {t(f'{s}, 4')}, %b: {t('4, 2')}) -> {t(f'{s} stream, 2, r4')} {{
  %r = fusion.relu %a : {t(f'{s}, 4')} -> {t(f'{s}, 4')}
  %c = fusion.matmul %r, %b : {t(f'{s}, 4')}, {t('4, 2')} -> {t(f'{s} stream, 2, r4')}
  fusion.return %c : {t(f'{s} stream, 2, r4')}
}}"""


def pointwise_chain(s: int) -> str:
    """exp(relu(x)) + x with a Stream output: a two-op unit and an add share the loop."""
    x, y = t(f'{s}, 8'), t(f'{s} stream, 8')
    return f"""fusion.func @f(%x: {x}) -> {y} {{
  %r = fusion.relu %x : {x} -> {x}
  %e = fusion.exp %r : {x} -> {x}
  %y = fusion.add %e, %x : {x}, {x} -> {y}
  fusion.return %y : {y}
}}"""


def matmul_feeds_unit(s: int) -> str:
    """A Stream matmul feeding a cast unit (issue 12, defect 6: the post's operands did not
    match its unit)."""
    a, b, c = t(f'{s}, 2, 1'), t('1, 2'), t(f'{s} stream, 2, 2, r1')
    d = f"!fusion.tensor<f64[{s} stream, 2, 2]>"
    return f"""fusion.func @f(%a: {a}, %b: {b}) -> {d} {{
  %c = fusion.matmul %a, %b : {a}, {b} -> {c}
  %d = fusion.cast %c : {c} -> {d}
  fusion.return %d : {d}
}}"""


SINGLE_DEVICE = [
    pytest.param(single_set, PIPELINE, id="SingleSetOp"),
    pytest.param(non_outermost, PIPELINE, id="SingleSetOpNonOutermost"),
    pytest.param(binary, PIPELINE, id="SingleBinaryOp"),
    pytest.param(two_sets, PIPELINE, id="TwoOps"),
    pytest.param(three_sets, PIPELINE, id="ThreeOpsWithDisjointForLoops"),
    pytest.param(reduction, PIPELINE, id="Reduction"),
    pytest.param(matmul_m, PIPELINE, id="Matmul_M"),
    pytest.param(batched_matmul, PIPELINE, id="BatchedMatmul"),
    pytest.param(matmul_n, PIPELINE, id="Matmul_N"),
    pytest.param(broadcast_operand, PIPELINE, id="BroadcastOperand"),
    pytest.param(mlp, PIPELINE, id="MatmulReduce"),
    pytest.param(mlp, BOUNDED, id="MatmulReduce-bounded"),
    pytest.param(unit_feeds_matmul, PIPELINE, id="KernelUnitFeedsMatmul"),
    pytest.param(pointwise_chain, PIPELINE, id="PointwiseChain"),
    pytest.param(matmul_feeds_unit, PIPELINE, id="MatmulFeedsKernelUnit"),
    pytest.param(matmul_feeds_unit, BOUNDED, id="MatmulFeedsKernelUnit-bounded"),
]


def lowered(text: str, pipeline: str):
    module = parse_module(text)
    run_passes(make_context(), module, build_passes(pipeline))
    return module


def allocates_in_loop(program) -> bool:
    """bounded-intermediates gave some intermediate per-iteration chunk buffers."""
    return any(op.name == "hir.allocate" and op.parent_op().name == "scf.for" for op in program.walk())


def random_inputs(module, seed: int) -> list[torch.Tensor]:
    generator = torch.Generator().manual_seed(seed)
    func = next(iter(module.ops))
    return [torch.randn(arg.type.value_shape(), generator=generator) for arg in func.args]


@pytest.mark.parametrize("extent", EXTENTS)
@pytest.mark.parametrize(("fusion_text", "pipeline"), SINGLE_DEVICE)
def test_single_device_matches_eager(fusion_text, pipeline, extent):
    text = fusion_text(extent)
    reference = parse_module(text)
    inputs = random_inputs(reference, seed=extent)
    expected = runtime.run_fusion(reference, inputs)
    program = lowered(text, pipeline)
    assert any(op.name == "scf.for" for op in program.walk()), "no stream loop was built"
    assert allocates_in_loop(program) == (pipeline == BOUNDED)
    for streams in STREAM_COUNTS:
        got = runtime.execute(program, inputs, rank=0, world_size=1, number_of_streams=streams)
        assert len(got) == len(expected)
        for g, e in zip(got, expected):
            torch.testing.assert_close(g, e, **TOLERANCE, msg=lambda m: f"numberOfStreams={streams}: {m}")



@pytest.mark.parametrize("fusion_text", [unit_feeds_matmul, pointwise_chain, matmul_feeds_unit])
def test_kernel_units_run_in_the_loop(fusion_text):
    """Beyond nvFuser: a unit whose ops all map the stream axis is posted once per chunk."""
    program = lowered(fusion_text(4), PIPELINE)
    posts = [op for op in program.walk() if op.name == "hir.post_on_stream"]
    assert posts and all(op.parent_op().name == "scf.for" for op in posts)

# --------------------------------------------------------------------------- #
# Multi-device collective pipelines (MultiDeviceStreamParallelTypeTest), D = 2
# --------------------------------------------------------------------------- #


def allgather(s: int, d: int = 2) -> str:
    return f"""fusion.func @f(%a: {t(f'{s}, {d} didx', d)}) -> {t(f'{s} stream, {d}', d)} {{
  %b = fusion.set %a : {t(f'{s}, {d} didx', d)} -> {t(f'{s} stream, {d}', d)}
  fusion.return %b : {t(f'{s} stream, {d}', d)}
}}"""


def allreduce(s: int, d: int = 2) -> str:
    a, b = t(f'{s}, {d} didx, 8', d), t(f'{s} stream, r{d} didx, 8', d)
    return f"""fusion.func @f(%a: {a}) -> {b} {{
  %b = fusion.reduce sum %a dims [1] : {a} -> {b}
  fusion.return %b : {b}
}}"""


def reduce_scatter(s: int, d: int = 2) -> str:
    a, b = t(f'{s}, {d} didx, {d}, 8', d), t(f'{s} stream, r{d}, {d} didx, 8', d)
    return f"""fusion.func @f(%a: {a}) -> {b} {{
  %b = fusion.reduce sum %a dims [1] : {a} -> {b}
  fusion.return %b : {b}
}}"""


def ag_matmul(s: int, m: int = 2, k: int = 8, n: int = 3, d: int = 2) -> str:
    """A sharded on its device axis, C stream-parallel: decompose-reshardings inserts the
    allgathering set before the matmul (or, with insert-after, after it)."""
    a, b, c = t(f'{s}, {d} didx, {m}, {k}', d), t(f'{k}, {n}', d), t(f'{s} stream, {d}, {m}, {n}, r{k}', d)
    return f"""fusion.func @f(%a: {a}, %b: {b}) -> {c} {{
  %c = fusion.matmul %a, %b : {a}, {b} -> {c}
  fusion.return %c : {c}
}}"""


def matmul_ar(s: int, m: int = 4, k: int = 4, n: int = 3, d: int = 2) -> str:
    """K sharded: each device's partial products are all-reduced chunk by chunk."""
    a, b = t(f'{s}, {d} didx, {m}, {k}', d), t(f'b1, {d} didx, {k}, {n}', d)
    u, c = t(f'{s} stream, {d} didx, {m}, {n}, r{k}', d), t(f'{s} stream, r{d} didx, {m}, {n}', d)
    return f"""fusion.func @f(%a: {a}, %b: {b}) -> {c} {{
  %u = fusion.matmul %a, %b : {a}, {b} -> {u}
  %c = fusion.reduce sum %u dims [1] : {u} -> {c}
  fusion.return %c : {c}
}}"""


def matmul_rs(s: int, m: int = 2, k: int = 4, n: int = 3, d: int = 2, scatters: bool = True) -> str:
    """K sharded, each chunk's rows as D blocks, the result reduce-scattered by block; B
    reaches the matmul through a broadcast unit. `scatters` False: all-reduced instead
    (matmul+AR with row blocks, so that split-by-member splits its producer too)."""
    a, b, bb = t(f'{s}, {d} didx, {d}, {m}, {k}', d), t(f'{d} didx, {k}, {n}', d), t(f'b1, {d} didx, b1, {k}, {n}', d)
    blocks = f"{d} didx" if scatters else f"{d}"
    u, c = t(f'{s} stream, {d} didx, {d}, {m}, {n}, r{k}', d), t(f'{s} stream, r{d}, {blocks}, {m}, {n}', d)
    return f"""fusion.func @f(%a: {a}, %b: {b}) -> {c} {{
  %bb = fusion.broadcast %b dims [0, 2] : {b} -> {bb}
  %u = fusion.matmul %a, %bb : {a}, {bb} -> {u}
  %c = fusion.reduce sum %u dims [1] : {u} -> {c}
  fusion.return %c : {c}
}}"""


def independent_pipelines(s: int, d: int = 2) -> str:
    """An attention block's two projections in one fusion: all-gather + matmul (QKV),
    written first, and beside it matmul + reduce-scatter (the output projection), which
    reads nothing of the first. One loop, each iteration sending before it receives."""
    a, b, c = t(f'{s}, {d} didx, 2, 8', d), t('8, 3', d), t(f'{s} stream, {d}, 2, 3, r8', d)
    x, w, ww = t(f'{s}, {d} didx, {d}, 2, 4', d), t(f'{d} didx, 4, 3', d), t(f'b1, {d} didx, b1, 4, 3', d)
    u, o = t(f'{s} stream, {d} didx, {d}, 2, 3, r4', d), t(f'{s} stream, r{d}, {d} didx, 2, 3', d)
    return f"""fusion.func @f(%a: {a}, %b: {b}, %x: {x}, %w: {w}) -> ({c}, {o}) {{
  %c = fusion.matmul %a, %b : {a}, {b} -> {c}
  %ww = fusion.broadcast %w dims [0, 2] : {w} -> {ww}
  %u = fusion.matmul %x, %ww : {x}, {ww} -> {u}
  %o = fusion.reduce sum %u dims [1] : {u} -> {o}
  fusion.return %c, %o : {c}, {o}
}}"""


def matmul_ar_blocks(s: int, d: int = 2) -> str:
    return matmul_rs(s, d=d, scatters=False)


def p2p_ag_matmul(m: int, k: int = 8, n: int = 3, d: int = 2) -> str:
    """The P2P DID -> Stream pipeline (nvFuser #4515): the stream axis is A's device axis,
    so the loop is a ring of shifts, one member's shard per iteration, own shard first
    (its extent is the device count: the first argument varies M)."""
    a, b = t(f'{d} didx, {m}, {k}', d), t(f'{k}, {n}', d)
    g, c = t(f'{d} stream, {m}, {k}', d), t(f'{d} stream, {m}, {n}, r{k}', d)
    return f"""fusion.func @f(%a: {a}, %b: {b}) -> {c} {{
  %g = fusion.set %a : {a} -> {g}
  %c = fusion.matmul %g, %b : {g}, {b} -> {c}
  fusion.return %c : {c}
}}"""


ALLREDUCES_OF_A_MATMUL = (matmul_ar, matmul_ar_blocks)
"""The cases whose all-reduce reduces a matmul's product: `reduce-in-producer` applies."""
REDUCE_SCATTERS_OF_A_MATMUL = (matmul_rs, independent_pipelines)
"""The cases whose reduce-scatter reduces a matmul's product: `reduce-scatter-in-producer`
applies (their outputs are allocated once per run, bounded intermediates or not, and can be
made symmetric)."""
MULTI_DEVICE = {
    "Allgather": (allgather, PIPELINE, "hir.allgather"),
    "Allreduce": (allreduce, PIPELINE, "hir.allreduce"),
    "ReduceScatter": (reduce_scatter, PIPELINE, "hir.reduce_scatter"),
    "AG_before_Matmul": (ag_matmul, PIPELINE, "hir.allgather"),
    "AG_before_Matmul-bounded": (ag_matmul, BOUNDED, "hir.allgather"),
    "AG_after_Matmul": (ag_matmul, AG_AFTER, "hir.allgather"),
    "matmul_AR": (matmul_ar, PIPELINE, "hir.allreduce"),
    "matmul_AR-bounded": (matmul_ar, BOUNDED, "hir.allreduce"),
    "matmul_RS_through_bcast": (matmul_rs, PIPELINE, "hir.reduce_scatter"),
    "P2P_AG_Matmul": (p2p_ag_matmul, PIPELINE, "hir.shift"),
    "independent_pipelines": (independent_pipelines, PIPELINE, "hir.reduce_scatter"),
    "P2P_AG_Matmul-bounded": (p2p_ag_matmul, BOUNDED, "hir.shift"),
    # The copy-engine transport (docs/copy_engine.md); split-by-member splits the matmuls.
    "Allreduce-copy_engine": (allreduce, COPY_ENGINE, "hir.allreduce"),
    "ReduceScatter-copy_engine": (reduce_scatter, COPY_ENGINE, "hir.reduce_scatter"),
    "AG_before_Matmul-copy_engine": (ag_matmul, COPY_ENGINE, "hir.allgather"),
    "matmul_AR-copy_engine": (matmul_ar, COPY_ENGINE, "hir.allreduce"),
    "matmul_RS_through_bcast-copy_engine": (matmul_rs, COPY_ENGINE, "hir.reduce_scatter"),
    "matmul_RS_through_bcast-rs_in_producer-copy_engine": (matmul_rs, COPY_ENGINE_RS_IN_PRODUCER, "hir.reduce_scatter"),
    "matmul_RS_through_bcast-rs_in_producer-copy_engine-bounded": (matmul_rs, COPY_ENGINE_BOUNDED_RS_IN_PRODUCER,
                                                                   "hir.reduce_scatter"),
    "independent_pipelines-rs_in_producer-copy_engine": (independent_pipelines, COPY_ENGINE_RS_IN_PRODUCER,
                                                         "hir.allgather"),
    "matmul_AR_blocks": (matmul_ar_blocks, PIPELINE, "hir.allreduce"),
    "matmul_AR_blocks-copy_engine": (matmul_ar_blocks, COPY_ENGINE, "hir.allreduce"),
    "matmul_AR_blocks-copy_engine-bounded": (matmul_ar_blocks, COPY_ENGINE_BOUNDED, "hir.allreduce"),
    "matmul_AR-reduce_in_producer-copy_engine": (matmul_ar, COPY_ENGINE_REDUCE_IN_PRODUCER, "hir.allreduce"),
    "matmul_AR_blocks-reduce_in_producer-copy_engine": (matmul_ar_blocks, COPY_ENGINE_REDUCE_IN_PRODUCER,
                                                        "hir.allreduce"),
    "matmul_AR-plain_allreduce-copy_engine": (matmul_ar, COPY_ENGINE_PLAIN_ALLREDUCE, "hir.allreduce"),
    "matmul_AR_blocks-plain_allreduce-copy_engine": (matmul_ar_blocks, COPY_ENGINE_PLAIN_ALLREDUCE, "hir.allreduce"),
    "AG_before_Matmul-copy_engine-bounded": (ag_matmul, COPY_ENGINE_BOUNDED, "hir.allgather"),
    "independent_pipelines-copy_engine": (independent_pipelines, COPY_ENGINE, "hir.allgather"),
    # transport=auto: no stream loop (choose-pipelining), the collectives on whole tensors.
    "AG_before_Matmul-auto": (ag_matmul, AUTO, "hir.allgather"),
    "matmul_AR-auto": (matmul_ar, AUTO, "hir.allreduce"),
    "matmul_RS_through_bcast-auto": (matmul_rs, AUTO, "hir.reduce_scatter"),
}
FOUR_DEVICES = [name for name in MULTI_DEVICE if name.endswith(("copy_engine", "auto"))] + [
    "AG_before_Matmul", "matmul_RS_through_bcast", "P2P_AG_Matmul",
]
WORLD = 2
MULTI_EXTENTS = (3, 4)
RUNS = 3
"""Each job runs this often: copy-engine buffers and flags are reused from run to run."""


SPLIT_BY_MEMBER = {
    "AG_before_Matmul-copy_engine", "AG_before_Matmul-copy_engine-bounded", "matmul_RS_through_bcast-copy_engine",
    "matmul_AR_blocks-copy_engine", "matmul_AR_blocks-copy_engine-bounded", "independent_pipelines-copy_engine",
    "matmul_AR-copy_engine", "AG_before_Matmul-auto", "matmul_AR-reduce_in_producer-copy_engine",
    "matmul_AR_blocks-reduce_in_producer-copy_engine", "matmul_AR-plain_allreduce-copy_engine",
    "matmul_AR_blocks-plain_allreduce-copy_engine", "matmul_RS_through_bcast-rs_in_producer-copy_engine",
    "matmul_RS_through_bcast-rs_in_producer-copy_engine-bounded", "independent_pipelines-rs_in_producer-copy_engine",
}
"""The cases whose compute split-by-member splits around the copy-engine collective
(its member loops use `hir.team_position`): the others have no compute next to it.
matmul_AR's chunks have no axis of team members, and split into D blocks of their rows
(the 4 rows divide among 2 and 4 devices). The `auto` cases run whole, on the copy
engines at these sizes: AG_before_Matmul-auto splits, matmul_AR-auto where D divides
the S chunks' axis, the outermost of its buffer (`splits_by_member`), on two ranks (the
cost model of a machine without GPUs is two H200's, which has no copy-engine reduction
measured on more: on four ranks `auto` keeps it on NCCL), and
matmul_RS_through_bcast-auto does not (its members' rows sit inside the S chunks of A,
whose parts would be strided)."""


def splits_by_member(name: str, extent: int, world: int) -> bool:
    if name == "matmul_AR-auto":
        return extent % world == 0 and world == 2
    return name in SPLIT_BY_MEMBER


def stream_counts(pipeline: str) -> list[tuple[int, int]]:
    """(numberOfStreams, copy_engine_streams) of a case's jobs: every stream count, and on
    the copy engines also 2 communication streams per phase, the posts taking them in turn."""
    copy_engine = pipeline in COPY_ENGINE_PIPELINES
    return [(streams, 1) for streams in STREAM_COUNTS] + ([(STREAM_COUNTS[-1], 2)] if copy_engine else [])


def split_by_member(program) -> bool:
    ops = list(program.walk())
    copy_engine = any(isinstance(op, hir.CollectiveOp) and op.uses_copy_engine for op in ops)
    return copy_engine and any(isinstance(op, hir.TeamPositionOp) for op in ops)


def collective_in_loop(program, collective: str) -> bool:
    return any(op.name == collective and op.parent_op().name == "scf.for" for op in program.walk())


def multi_device_jobs(world: int, names: list[str]) -> tuple[list[Job], list[tuple]]:
    jobs, expectations = [], []
    for name in names:
        fusion_text, pipeline, collective = MULTI_DEVICE[name]
        for extent in MULTI_EXTENTS:
            text = fusion_text(extent, d=world)
            reference = parse_module(text)
            inputs = random_inputs(reference, seed=extent)
            expected = runtime.run_fusion(reference, inputs)
            program = lowered(text, pipeline)
            in_loop = collective_in_loop(program, collective)
            assert in_loop == (pipeline != AUTO), f"{name}: {collective} and the stream loop"
            if pipeline not in (COPY_ENGINE_BOUNDED, COPY_ENGINE_BOUNDED_RS_IN_PRODUCER):
                # there the bounded buffers that communicate become symmetric slices
                assert allocates_in_loop(program) == (pipeline == BOUNDED), name
            if pipeline != AUTO:
                assert ("transport copy_engine" in str(program)) == (pipeline in COPY_ENGINE_PIPELINES), name
            split = splits_by_member(name, extent, world)
            assert split_by_member(program) == split, (name, extent, world)
            reduces_in_producer = split and in_loop and (
                fusion_text in ALLREDUCES_OF_A_MATMUL and pipeline not in WITHOUT_REDUCE_IN_PRODUCER
                or fusion_text in REDUCE_SCATTERS_OF_A_MATMUL
                and pipeline in (COPY_ENGINE_RS_IN_PRODUCER, COPY_ENGINE_BOUNDED_RS_IN_PRODUCER))
            assert (" own(" in str(program)) == reduces_in_producer, name
            # order-chunk-compute skews such a loop that only sends: each chunk's all-reduce or
            # reduce-scatter waited in the next iteration (not with bounded intermediates, whose waits
            # are followed by frees, nor where the loop also receives, as independent_pipelines' does).
            skewed = reduces_in_producer and fusion_text is not independent_pipelines and \
                pipeline not in (COPY_ENGINE_BOUNDED, COPY_ENGINE_BOUNDED_RS_IN_PRODUCER)
            assert ("iter_args(%previous" in str(program)) == skewed, name
            (function,) = [op for op in program.ops if isinstance(op, hir.ProgramOp)]
            arg_types = [arg.type for arg in function.args]
            per_rank = [[runtime.shard_tensor(x, ty, r) for x, ty in zip(inputs, arg_types)] for r in range(world)]
            output_types = list(function.function_type.outputs.data)
            for streams, lanes in stream_counts(pipeline):
                jobs.append(Job(str(program), per_rank, number_of_streams=streams, repeat=RUNS,
                                copy_engine_streams=lanes))
                expectations.append((name, extent, (streams, lanes), expected, output_types))
    return jobs, expectations


@pytest.fixture(scope="module")
def multi_device_runs():
    """Every (case, extent, numberOfStreams) job on two and on four gloo ranks, one launch each."""
    runs = {}
    for world, names in ((2, list(MULTI_DEVICE)), (4, FOUR_DEVICES)):
        jobs, expectations = multi_device_jobs(world, names)
        runs[world] = list(zip(expectations, run_spmd_batch(jobs, world, backend="gloo")))
    return runs


@pytest.mark.parametrize("world, case", [(2, name) for name in MULTI_DEVICE] + [(4, name) for name in FOUR_DEVICES])
def test_multi_device_matches_eager(multi_device_runs, world, case):
    runs = [(e, r) for e, r in multi_device_runs[world] if e[0] == case]
    assert len(runs) == len(MULTI_EXTENTS) * len(stream_counts(MULTI_DEVICE[case][1]))
    for (name, extent, (streams, lanes), expected, output_types), ranks in runs:
        for index, (want, ty) in enumerate(zip(expected, output_types)):
            assert isinstance(ty, TensorType)
            for rank, result in enumerate(ranks):
                local = runtime.shard_tensor(want, ty, rank)
                torch.testing.assert_close(
                    result.outputs[index], local, **TOLERANCE,
                    msg=lambda m: f"{name} S={extent} numberOfStreams={streams} copy_engine_streams={lanes} "
                                  f"rank {rank} output {index}: {m}",
                )


# --------------------------------------------------------------------------- #
# One device: the same program text, on every transport (a team of one moves nothing)
# --------------------------------------------------------------------------- #


@pytest.mark.parametrize("pipeline", [PIPELINE, COPY_ENGINE, AUTO])
@pytest.mark.parametrize("fusion_text", [allgather, allreduce, reduce_scatter, ag_matmul, matmul_ar, matmul_rs,
                                         p2p_ag_matmul])
def test_one_device_posts_no_collective_on_any_transport(fusion_text, pipeline):
    """At D = 1 every device axis is one device wide: the lowering emits no collective (a
    copy-engine collective on a team of one would be refused), and the program computes
    what eager torch does."""
    for extent in MULTI_EXTENTS:
        text = fusion_text(extent, d=1)
        reference = parse_module(text)
        inputs = random_inputs(reference, seed=extent)
        expected = runtime.run_fusion(reference, inputs)
        program = lowered(text, pipeline)
        assert not [op.name for op in program.walk() if isinstance(op, hir.CollectiveOp)], str(program)
        for streams in STREAM_COUNTS:
            got = runtime.execute(program, inputs, rank=0, world_size=1, number_of_streams=streams)
            for g, e in zip(got, expected, strict=True):
                torch.testing.assert_close(g, e, **TOLERANCE, msg=lambda m: f"S={extent} numberOfStreams={streams}: {m}")


# --------------------------------------------------------------------------- #
# GPU: NCCL and real streams; the collective of one chunk overlaps another's matmul
# --------------------------------------------------------------------------- #

# Sizes where one chunk's collective and matmul take comparable time on H100/H200 (fp32).
GPU_CASES = {
    "AG+matmul": ag_matmul(4, m=2048, k=4096, n=256),
    "matmul+AR": matmul_ar(4, m=2048, k=512, n=4096),
    "matmul+RS": matmul_rs(4, m=1024, k=512, n=4096),
    "matmul+AR blocks": matmul_rs(4, m=1024, k=512, n=4096, scatters=False),
}
GPU_TOLERANCE = {"rtol": 1e-4, "atol": 1e-3}
GEMM_KERNEL = re.compile(r"gemm|gemv|xmma|cutlass|nvjet", re.IGNORECASE)  # nvjet: cuBLASLt on Hopper
TRANSFER = re.compile(r"nccl|memcpy ptop", re.IGNORECASE)
"""NCCL's kernels, or the copy engines' peer-to-peer copies."""


def profile_job(rank: int, world_size: int, program: str, per_rank: list, streams: int,
                cuda_graph: bool = False, copy_engine_streams: int = 1) -> dict:
    """On each rank: run once to warm up (and capture, with `cuda_graph`), then once under
    torch.profiler; the outputs and the (start, end) intervals of the collective and of the
    matmul kernels."""
    device = device_for(dist.get_backend(), rank)
    evaluator = runtime.Evaluator(parse_module(program), rank=rank, world_size=world_size,
                                  number_of_streams=streams, device=device, cuda_graph=cuda_graph,
                                  copy_engine_streams=copy_engine_streams)
    inputs = [x.to(device) for x in per_rank[rank]]
    evaluator.run(inputs)
    torch.cuda.synchronize(device)
    with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CUDA]) as profile:
        # The profiler starts on each rank in its own time (up to hundreds of microseconds
        # apart); a rank that launches first waits for its peer's flags, and its GEMMs then
        # run before any copy: the skew, not the schedule (a matmul+RS copy-engine run on
        # 2x H200 lost all overlap so). A barrier on the host (gloo: no kernel to profile).
        dist.barrier(group=_host_group())
        outputs = evaluator.run(inputs)
        torch.cuda.synchronize(device)
    kernels = [e for e in profile.events() if e.device_type == torch.autograd.DeviceType.CUDA]
    intervals = {
        kind: sorted((e.time_range.start, e.time_range.end) for e in kernels if match(e.name))
        for kind, match in (("collective", TRANSFER.search), ("matmul", GEMM_KERNEL.search))
    }
    return {"outputs": [o.cpu() for o in outputs], **intervals}


@functools.cache
def _host_group() -> dist.ProcessGroup:
    return dist.new_group(backend="gloo")


def profile_jobs(rank: int, world_size: int, jobs: list[tuple]) -> list[dict]:
    """`profile_job` of each job (its arguments after the rank's), one after another in one
    launch: spawning the ranks, NCCL and the profiler cost seconds a launch, which one
    launch per job paid over and over (22 copy-engine jobs took 200 s)."""
    return [profile_job(rank, world_size, *job) for job in jobs]


def overlapping(first: list[tuple[float, float]], second: list[tuple[float, float]]) -> bool:
    return any(a0 < b1 and b0 < a1 for a0, a1 in first for b0, b1 in second)


@dataclass(frozen=True)
class GpuRun:
    """A GPU case lowered, what each rank must compute, and what each rank's profiled run gave."""

    program: str
    expected: list[torch.Tensor]
    """Each rank's output, from eager torch on the whole inputs."""
    ranks: list[dict]
    """`profile_job`'s result on each rank."""


def gpu_runs(jobs: dict[tuple, tuple[str, str, int, int]]) -> dict[tuple, GpuRun]:
    """Each job, `(case, pipeline, numberOfStreams, copy-engine streams)` by key, lowered,
    then replayed from a CUDA graph under the profiler on 2 GPUs, all in one launch."""
    prepared = {key: _gpu_program(case, pipeline) for key, (case, pipeline, _, _) in jobs.items()}
    launched = [(*prepared[key][:2], streams, True, lanes) for key, (_, _, streams, lanes) in jobs.items()]
    per_rank = launch(profile_jobs, WORLD, (launched,), backend="nccl", timeout=600)
    return {key: GpuRun(program, expected, [results[index] for results in per_rank])
            for index, (key, (program, _, expected)) in enumerate(prepared.items())}


def _gpu_program(case: str, pipeline: str) -> tuple[str, list, list[torch.Tensor]]:
    """GPU_CASES[case] lowered by `pipeline`: its text, each rank's inputs and each rank's expected output."""
    text = GPU_CASES[case]
    reference = parse_module(text)
    inputs = random_inputs(reference, seed=0)
    (expected,) = runtime.run_fusion(reference, [x.cuda() for x in inputs])
    program = lowered(text, pipeline)
    (function,) = [op for op in program.ops if isinstance(op, hir.ProgramOp)]
    arg_types = [arg.type for arg in function.args]
    per_rank = [[runtime.shard_tensor(x, ty, r) for x, ty in zip(inputs, arg_types)] for r in range(WORLD)]
    output_type = function.function_type.outputs.data[0]
    return str(program), per_rank, [runtime.shard_tensor(expected.cpu(), output_type, r) for r in range(WORLD)]


NCCL_OVERLAP = ((4, True), (1, False))
"""numberOfStreams, and whether one chunk's collective overlaps another's matmul."""


@pytest.fixture(scope="module")
def nccl_gpu_runs() -> dict[tuple, GpuRun]:
    return gpu_runs({(case, streams): (case, PIPELINE, streams, 1) for case in GPU_CASES for streams, _ in NCCL_OVERLAP})


@pytest.mark.gpu
@pytest.mark.skipif(torch.cuda.device_count() < 2, reason="needs 2 CUDA GPUs")
@pytest.mark.parametrize("case", list(GPU_CASES))
def test_gpu_pipeline_is_correct_and_overlaps(nccl_gpu_runs, case):
    for streams, overlap_expected in NCCL_OVERLAP:
        # A CUDA-graph replay is profiled: eagerly, launches can trail the GPU at these sizes,
        # which then runs each chunk alone, and whether chunks overlap would measure the host,
        # not the schedule (one eager run of this test failed on a freshly started 2x H200
        # and passed on the next machine).
        run = nccl_gpu_runs[case, streams]
        for rank, result in enumerate(run.ranks):
            torch.testing.assert_close(result["outputs"][0], run.expected[rank], **GPU_TOLERANCE)
            assert len(result["collective"]) >= 4 and len(result["matmul"]) >= 4, result
            # The wait orders each chunk's collective and matmul, so any overlap is between
            # different chunks; with one stream everything is serialized.
            assert overlapping(result["collective"], result["matmul"]) == overlap_expected, (
                f"{case} rank {rank} numberOfStreams={streams}: collective {result['collective']} matmul {result['matmul']}"
            )


ALLREDUCE_OPTIONS = (COPY_ENGINE, COPY_ENGINE_SYMMETRIC_OUTPUT, COPY_ENGINE_REDUCE_IN_PRODUCER, COPY_ENGINE_PLAIN_ALLREDUCE)
"""The all-reduce options on and off: the other cases lower to one program under all of them."""
GPU_COPY_ENGINE_CASES = [(case, pipeline) for case in GPU_CASES for pipeline in (
    ALLREDUCE_OPTIONS if case.startswith("matmul+AR") else
    (COPY_ENGINE, COPY_ENGINE_RS_IN_PRODUCER) if case == "matmul+RS" else (COPY_ENGINE,))]


COPY_ENGINE_STREAMS = (1, 2)


@pytest.fixture(scope="module")
def copy_engine_gpu_runs() -> dict[tuple, GpuRun]:
    return gpu_runs({(case, pipeline, lanes): (case, pipeline, 4, lanes)
                     for case, pipeline in GPU_COPY_ENGINE_CASES for lanes in COPY_ENGINE_STREAMS})


@pytest.mark.gpu
@pytest.mark.skipif(torch.cuda.device_count() < 2, reason="needs 2 CUDA GPUs")
@pytest.mark.parametrize("copy_engine_streams", COPY_ENGINE_STREAMS)
@pytest.mark.parametrize(("case", "pipeline"), GPU_COPY_ENGINE_CASES)
def test_gpu_copy_engine_pipeline_is_correct_and_copies_overlap_matmuls(copy_engine_gpu_runs, case, pipeline,
                                                                       copy_engine_streams):
    """The copy-engine transport on GPUs, with one and two communication streams per
    phase: right results, and, where split-by-member splits the matmul (AG+matmul,
    matmul+RS, matmul+AR with row blocks), peer-to-peer copies that run while a matmul
    does. The profiled run is a CUDA-graph replay: eagerly, at these sizes, the host's
    launches can be slower than the GPU, which then runs each copy alone, so whether they
    overlap would measure the host, not the schedule. matmul+AR without row blocks has no
    split: its copies overlap only other iterations' matmuls, which the schedule allows
    but does not demand. With `symmetric-allreduce-output` too (the all-reduces' results are
    result sets): its pushes once waited behind a result set's acquisition, i.e. for the
    other rank's host to start its run (20-125 ms when the profiler started late there).
    With `reduce-in-producer`: the own part's GEMM runs on a stream of its own, after the
    other rank's part arrived; with both options, it adds in place onto the part pushed
    into the output, as the reduce-scatter's does when it is waited with
    `reduce-scatter-in-producer`."""
    run = copy_engine_gpu_runs[case, pipeline, copy_engine_streams]
    assert "transport copy_engine" in run.program
    assert (" own(" in run.program) == (case.startswith("matmul+AR") and pipeline not in WITHOUT_REDUCE_IN_PRODUCER
                                        or pipeline == COPY_ENGINE_RS_IN_PRODUCER)
    for rank, result in enumerate(run.ranks):
        torch.testing.assert_close(result["outputs"][0], run.expected[rank], **GPU_TOLERANCE)
        assert result["collective"] and result["matmul"], result
        if case != "matmul+AR":
            assert overlapping(result["collective"], result["matmul"]), (
                f"{case} rank {rank}: copies {result['collective']} matmuls {result['matmul']}"
            )


# --------------------------------------------------------------------------- #
# GPU: every pipeline replayed from a CUDA graph computes what it computes eagerly
# --------------------------------------------------------------------------- #


def eager_and_replayed(rank: int, world_size: int, jobs: list) -> list[dict]:
    """Each job run eagerly and in graph mode, twice, with different inputs the second time
    (a replay must read its new inputs): the outputs of both and the graphs captured."""
    device = device_for(dist.get_backend(), rank)
    results = []
    for text, per_rank, streams in jobs:
        module = parse_module(text)
        # Units run op by op: what is checked is the replay against the eager run, and
        # Inductor compiling every unit of 282 programs took the GPU run past 5 minutes
        # (compiled units are in the GPU differential profile).
        options = {"rank": rank, "world_size": world_size, "number_of_streams": streams, "device": device,
                   "unit_backend": "eager"}
        eager, graph = runtime.Evaluator(module, **options), runtime.Evaluator(module, cuda_graph=True, **options)
        runs = []
        for scale in (1.0, -2.0):
            inputs = [None if x is None else scale * x.to(device) for x in per_rank[rank]]
            runs.append(([o.cpu() for o in eager.run(inputs)], [o.cpu() for o in graph.run(inputs)]))
        results.append({"runs": runs, "graphs": None if graph.graphs is None else len(graph.graphs), "mode": graph.graph_mode})
    return results


def every_pipeline() -> list[tuple[str, str, list, int]]:
    """(name, host program, inputs of each rank, numberOfStreams) for every case of this file."""
    found = []
    for param in SINGLE_DEVICE:
        fusion_text, pipeline = param.values
        for extent in EXTENTS:
            inputs = random_inputs(parse_module(fusion_text(extent)), seed=extent)
            found += [(f"{param.id} S={extent} streams={n}", str(lowered(fusion_text(extent), pipeline)),
                       [inputs] * WORLD, n) for n in STREAM_COUNTS]
    for name, (fusion_text, pipeline, _) in MULTI_DEVICE.items():
        for extent in MULTI_EXTENTS:
            inputs = random_inputs(parse_module(fusion_text(extent)), seed=extent)
            program = lowered(fusion_text(extent), pipeline)
            (function,) = [op for op in program.ops if isinstance(op, hir.ProgramOp)]
            per_rank = [[runtime.shard_tensor(x, arg.type, r) for x, arg in zip(inputs, function.args)]
                        for r in range(WORLD)]
            found += [(f"{name} S={extent} streams={n}", str(program), per_rank, n) for n in STREAM_COUNTS]
    return found


@pytest.mark.gpu
@pytest.mark.skipif(torch.cuda.device_count() < 2, reason="needs 2 CUDA GPUs")
def test_gpu_every_pipeline_replayed_from_a_cuda_graph_matches_eager():
    cases = every_pipeline()
    per_rank = launch(eager_and_replayed, WORLD, ([(text, inputs, n) for _, text, inputs, n in cases],),
                      backend="nccl", timeout=600)
    for index, (name, *_) in enumerate(cases):
        for rank, results in enumerate(per_rank):
            result = results[index]
            assert result["mode"] == CUDA_GRAPH and result["graphs"] == 1, (name, rank, result)
            for run, (eager, replayed) in enumerate(result["runs"]):
                for output, (want, got) in enumerate(zip(eager, replayed)):
                    torch.testing.assert_close(got, want, msg=lambda m: f"{name} rank {rank} run {run} output {output}: {m}")
