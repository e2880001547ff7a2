"""End to end: user fusions lowered by `hostir-lower` (`passes.lower`) and run on 1, 2 and 4
CPU ranks (gloo) compute what the eager fusion computes on unsharded data.

Each rank passes its local shards (`runtime.shard_tensor`); outputs are reassembled with
`runtime.unshard` and compared with `runtime.run_fusion` on the global inputs. Every
communication type is covered, plus partial matmul + allreduce / reduce-scatter, a
non-standalone group going through `hir.post_on_stream`, all-to-alls, reshardings of
inner axes, DIDy reshardings on 2-D meshes and the P2P DID -> Stream ring. Then the pipeline runs with each
pass disabled in turn: it must still compute the right result or fail with a located
diagnostic, never give a wrong answer.

Spawning ranks costs seconds, so all programs of a world size run in one launch.
Tolerance: float32, sums of at most 16 products of values in [-1, 1): rtol=atol=1e-5.
"""

from __future__ import annotations

from dataclasses import dataclass

import pytest
import torch

from hostir import passes, runtime
from hostir.passes import PIPELINES, PassManagerOptions
from hostir_dialect import hir
from hostir_dialect.context import parse_module
from hostir_dialect.diagnostics import HostIRError
from hostir_dialect.tensor_type import TensorType

TOLERANCE = {"rtol": 1e-5, "atol": 1e-5}


def t(spec: str) -> str:
    return f"!fusion.tensor<f32[{spec}]>"


def set_fusion(source: str, target: str) -> str:
    return f"""fusion.func @f(%a: {t(source)}) -> {t(target)} {{
  %b = fusion.set %a : {t(source)} -> {t(target)}
  fusion.return %b : {t(target)}
}}"""


def reduce_fusion(kind: str, dims: str, source: str, target: str) -> str:
    return f"""fusion.func @f(%a: {t(source)}) -> {t(target)} {{
  %b = fusion.reduce {kind} %a dims [{dims}] : {t(source)} -> {t(target)}
  fusion.return %b : {t(target)}
}}"""


def matmul_fusion(a: str, b: str, c: str) -> str:
    return f"""fusion.func @f(%a: {t(a)}, %b: {t(b)}) -> {t(c)} {{
  %c = fusion.matmul %a, %b : {t(a)}, {t(b)} -> {t(c)}
  fusion.return %c : {t(c)}
}}"""


def reshape_fusion(source: str, target: str) -> str:
    return f"""fusion.func @f(%a: {t(source)}) -> {t(target)} {{
  %b = fusion.reshape %a : {t(source)} -> {t(target)}
  fusion.return %b : {t(target)}
}}"""


def p2p_matmul(devices: str, m: int = 3) -> str:
    """A matmul whose stream axis is its input's device axis: a ring of shifts."""
    d = len(devices.split(","))
    a, b, c = t(f"{d} didx, {m}, 8], mesh=[{devices}"), t(f"8, 5], mesh=[{devices}"), t(f"{d} stream, {m}, 5, r8], mesh=[{devices}")
    return f"""fusion.func @f(%a: {a}, %b: {b}) -> {c} {{
  %c = fusion.matmul %a, %b : {a}, {b} -> {c}
  fusion.return %c : {c}
}}"""


MESH_2D = "mesh=[[0, 1], [2, 3]"


def grid(rows: int, columns: int) -> str:
    """A mesh of `rows` x `columns` devices, row-major from 0 (unclosed, as MESH_2D)."""
    return "mesh=[" + ", ".join(str(list(range(r * columns, (r + 1) * columns))) for r in range(rows))


def matmul_allreduce_2d(rows: int, columns: int) -> str:
    """Data parallel along DIDy, K split along DIDx: each row all-reduces its partial products."""
    mesh = grid(rows, columns)
    a, b = t(f"{rows} didy, {columns} didx, 3, 4], {mesh}"), t(f"{columns} didx, 4, 5], {mesh}")
    u, c = t(f"{rows} didy, {columns} didx, 3, 5, r4], {mesh}"), t(f"{rows} didy, r{columns}, 3, 5], {mesh}")
    return f"""fusion.func @f(%a: {a}, %b: {b}) -> {c} {{
  %u = fusion.matmul %a, %b : {a}, {b} -> {u}
  %c = fusion.reduce sum %u dims [1] : {u} -> {c}
  fusion.return %c : {c}
}}"""
ALLGATHER_ADD = f"""fusion.func @f(%x: {t('4(2 didx, 2), 8], mesh=[0, 1')}) -> {t('4, 8], mesh=[0, 1')} {{
  %r = fusion.relu %x : {t('4(2 didx, 2), 8], mesh=[0, 1')} -> {t('4, 8')}
  %e = fusion.exp %r : {t('4, 8')} -> {t('4, 8')}
  %s = fusion.add %e, %e : {t('4, 8')}, {t('4, 8')} -> {t('4, 8], mesh=[0, 1')}
  fusion.return %s : {t('4, 8], mesh=[0, 1')}
}}"""

RELU_EXP = f"""fusion.func @f(%x: {t('4, 8], mesh=[0, 1')}) -> {t('4, 8], mesh=[0, 1')} {{
  %r = fusion.relu %x : {t('4, 8], mesh=[0, 1')} -> {t('4, 8], mesh=[0, 1')}
  %e = fusion.exp %r : {t('4, 8], mesh=[0, 1')} -> {t('4, 8], mesh=[0, 1')}
  fusion.return %e : {t('4, 8], mesh=[0, 1')}
}}"""

K_SHARDED_MATMUL = matmul_fusion("4, 8(2 didx, 4)], mesh=[0, 1", "8(2 didx, 4), 6], mesh=[0, 1", "4, 6, r8")
MATMUL_REDUCE_SCATTER = matmul_fusion(
    "8, 4(2 didx, 2)], mesh=[0, 1", "4(2 didx, 2), 6], mesh=[0, 1", "8(2 didx, 4), 6, r4], mesh=[0, 1"
)
# overlap.py's matmul+RS layout without its stream loop ([S, D (K), D (row block), m, k]):
# the matmul computes its result with the row blocks outermost, as the collective needs it.
MATMUL_REDUCE_SCATTER_ROWS_INSIDE = f"""fusion.func @f(%a: {t('3, 2 didx, 2, 4, 5], mesh=[0, 1')}, %b: {t('2 didx, 5, 6], mesh=[0, 1')}) -> {t('3, r2, 2 didx, 4, 6], mesh=[0, 1')} {{
  %bb = fusion.broadcast %b dims [0, 2] : {t('2 didx, 5, 6], mesh=[0, 1')} -> {t('b1, 2 didx, b1, 5, 6], mesh=[0, 1')}
  %p = fusion.matmul %a, %bb : {t('3, 2 didx, 2, 4, 5], mesh=[0, 1')}, {t('b1, 2 didx, b1, 5, 6], mesh=[0, 1')} -> {t('3, 2 didx, 2, 4, 6, r5], mesh=[0, 1')}
  %c = fusion.reduce sum %p dims [1] : {t('3, 2 didx, 2, 4, 6, r5], mesh=[0, 1')} -> {t('3, r2, 2 didx, 4, 6], mesh=[0, 1')}
  fusion.return %c : {t('3, r2, 2 didx, 4, 6], mesh=[0, 1')}
}}"""
LINEAR_K_SHARDED_WEIGHT_4 = f"""fusion.func @f(%x: {t('3, 8], mesh=[0, 1, 2, 3')}, %w: {t('6, 8(4 didx, 2)], mesh=[0, 1, 2, 3')}) -> {t('3, 6, r8], mesh=[0, 1, 2, 3')} {{
  %y = fusion.linear %x, %w : {t('3, 8], mesh=[0, 1, 2, 3')}, {t('6, 8(4 didx, 2)], mesh=[0, 1, 2, 3')} -> {t('3, 6, r8], mesh=[0, 1, 2, 3')}
  fusion.return %y : {t('3, 6, r8], mesh=[0, 1, 2, 3')}
}}"""
STREAM_ALLGATHER = set_fusion("4, 2 didx, 8], mesh=[0, 1", "4 stream, 2, 8], mesh=[0, 1")
REPLICATED_PLUS_SHARDED = f"""fusion.func @f(%a: {t('4, 6], mesh=[0, 1')}, %b: {t('4, 6(2 didx, 3)], mesh=[0, 1')}) -> {t('4, 6(2 didx, 3)], mesh=[0, 1')} {{
  %c = fusion.add %a, %b : {t('4, 6], mesh=[0, 1')}, {t('4, 6(2 didx, 3)], mesh=[0, 1')} -> {t('4, 6(2 didx, 3)], mesh=[0, 1')}
  fusion.return %c : {t('4, 6(2 didx, 3)], mesh=[0, 1')}
}}"""
# A row-parallel linear feeding a sequence-sharded add: one reduce-scatter (issue 25).
SEQUENCE_PARALLEL_LINEAR_ADD = f"""fusion.func @f(%x: {t('3, 4, 8(2 didx, 4)], mesh=[0, 1')}, %w: {t('5, 8(2 didx, 4)], mesh=[0, 1')}, %r: {t('3, 4(2 didx, 2), 5], mesh=[0, 1')}) -> {t('3, 4(2 didx, 2), 5], mesh=[0, 1')} {{
  %y = fusion.linear %x, %w : {t('3, 4, 8(2 didx, 4)], mesh=[0, 1')}, {t('5, 8(2 didx, 4)], mesh=[0, 1')} -> {t('3, 4, 5, r8')}
  %z = fusion.add %y, %r : {t('3, 4, 5, r8')}, {t('3, 4(2 didx, 2), 5], mesh=[0, 1')} -> {t('3, 4(2 didx, 2), 5], mesh=[0, 1')}
  fusion.return %z : {t('3, 4(2 didx, 2), 5], mesh=[0, 1')}
}}"""

# Two consumers need %x gathered: decompose-reshardings shares one set between them.
TWO_CONSUMERS = f"""fusion.func @f(%x: {t('2 didx, 8], mesh=[0, 1')}) -> ({t('2, 8], mesh=[0, 1')}, {t('2, 8], mesh=[0, 1')}) {{
  %r = fusion.relu %x : {t('2 didx, 8], mesh=[0, 1')} -> {t('2, 8], mesh=[0, 1')}
  %s = fusion.add %x, %x : {t('2 didx, 8], mesh=[0, 1')}, {t('2 didx, 8], mesh=[0, 1')} -> {t('2, 8], mesh=[0, 1')}
  fusion.return %r, %s : {t('2, 8], mesh=[0, 1')}, {t('2, 8], mesh=[0, 1')}
}}"""

# name -> (fusion, world size); the comment names the collective the lowering must use
CASES: dict[str, tuple[str, int]] = {
    "allgather_add": (ALLGATHER_ADD, 2),  # allgather (inserted set), post_on_stream, add
    "relu_exp": (RELU_EXP, 2),  # post_on_stream only
    "gather_to_0": (set_fusion("2 didx, 8], mesh=[0, 1", "2, 8], mesh=[0"), 2),
    "gather_to_1": (set_fusion("2 didx, 8], mesh=[0, 1", "2, 8], mesh=[1"), 2),
    "scatter_from_0": (set_fusion("4, 8], mesh=[0", "4(2 didx, 2), 8], mesh=[0, 1"), 2),
    # No device in both meshes, so no root for a scatter: a broadcast, then each keeps its shard
    "scatter_from_outside_the_mesh": (set_fusion("4, 8], mesh=[0", "4(2 didx, 2), 8], mesh=[2, 3"), 4),
    "scatter_from_outside_the_mesh_3": (set_fusion("6, 8], mesh=[0", "6(2 didx, 3), 8], mesh=[1, 2"), 3),
    "scatter_from_outside_the_mesh_didx_of_one": (
        set_fusion("4(1 didx, 4), 8], mesh=[0", "4(2 didx, 2), 8], mesh=[2, 3"), 4
    ),  # a device type on a mesh axis of one device splits nothing
    # Between meshes no one collective pairs: gathered, broadcast whole, each keeps its shard
    "send_recv_mesh_sizes": (set_fusion("4(2 didx, 2), 8], mesh=[0, 1", "4 didx, 8], mesh=[0, 1, 2, 3"), 4),
    "send_recv_mesh_sizes_3": (set_fusion("6(3 didx, 2), 4], mesh=[0, 1, 2", "6(2 didx, 3), 4], mesh=[2, 1"), 3),
    "all_to_all_between_meshes": (set_fusion("2 didx, 8], mesh=[0, 1", "2, 8(2 didx, 4)], mesh=[2, 3"), 4),
    "scatter_to_2d": (set_fusion("2, 8], mesh=[0", "2 didy, 8(2 didx, 4)], mesh=[[0, 1], [2, 3]"), 4),
    "gather_from_2d": (set_fusion("2 didy, 8(2 didx, 4)], mesh=[[0, 1], [2, 3]", "2, 8], mesh=[1"), 4),
    "send_recv_2d": (set_fusion("2 didy, 8(2 didx, 4)], mesh=[[0, 1], [2, 3]", "2 didx, 8], mesh=[[3, 2], [1, 0]"), 4),
    "broadcast_to_2d": (set_fusion("2, 8], mesh=[2", "2, 8], mesh=[[0, 1], [2, 3]"), 4),
    "trade_didx_and_didy": (set_fusion("2 didy, 2 didx, 8], mesh=[[0, 1], [2, 3]", "2 didx, 2 didy, 8], mesh=[[0, 1], [2, 3]"), 4),
    "trade_didx_and_didy_on_a_row_of_two": (
        set_fusion("2(1 didy, 2), 2 didx, 8], mesh=[[0, 1]", "2 didx, 2(1 didy, 2), 8], mesh=[[0, 1]"), 2
    ),
    "trade_didx_and_didy_on_one_device": (set_fusion("1 didy, 1 didx, 8], mesh=[[0]", "1 didx, 1 didy, 8], mesh=[[0]"), 1),
    "trade_didx_and_didy_on_split_axes": (
        set_fusion("4(2 didy, 2), 4(2 didx, 2)], mesh=[[0, 1], [2, 3]", "4(2 didx, 2), 4(2 didy, 2)], mesh=[[0, 1], [2, 3]"), 4
    ),

    "broadcast_to_2d_on_one_device": (set_fusion("2, 8], mesh=[0", "2, 8], mesh=[[0]"), 1),
    "scatter_from_1": (set_fusion("4, 8], mesh=[1", "4(2 didx, 2), 8], mesh=[0, 1"), 2),
    "send_recv_swap": (set_fusion("2 didx, 8], mesh=[0, 1", "2 didx, 8], mesh=[1, 0"), 2),
    "broadcast": (set_fusion("4, 8], mesh=[0", "4, 8], mesh=[0, 1"), 2),
    "broadcast_single_devices": (set_fusion("1 didx, 8], mesh=[1", "1 didx, 8], mesh=[0"), 2),
    # Rooted at a sender that also receives: a local copy; the receiving mesh alone
    "broadcast_to_a_mesh_within": (set_fusion("4, 8], mesh=[0, 1", "4, 8], mesh=[1"), 2),
    "broadcast_to_an_overlapping_mesh": (set_fusion("4, 8], mesh=[0, 1, 2", "4, 8], mesh=[2, 3"), 4),

    "allreduce_sum": (reduce_fusion("sum", "1", "4, 8(2 didx, 4)], mesh=[0, 1", "4, r8], mesh=[0, 1"), 2),
    "allreduce_max": (reduce_fusion("max", "0", "2 didx, 8], mesh=[0, 1", "r2, 8], mesh=[0, 1"), 2),
    "reduce_to_0": (reduce_fusion("sum", "0", "2 didx, 8], mesh=[0, 1", "r2, 8], mesh=[0"), 2),
    # Reduced on the input's mesh (an all-reduce), then moved as a set between meshes
    "reduce_scatter_between_meshes": (reduce_fusion("sum", "0", "2 didx, 8], mesh=[0, 1", "r2, 8(2 didx, 4)], mesh=[2, 3"), 4),
    "reduce_scatter_between_meshes_3": (reduce_fusion("sum", "0", "2 didx, 6], mesh=[0, 1", "r2, 6(3 didx, 2)], mesh=[0, 1, 2"), 3),
    "reduce_from_2d": (reduce_fusion("sum", "0", "2 didx, 8], mesh=[[0, 1], [2, 3]", "r2, 8], mesh=[1"), 4),
    "reduce_scatter_between_meshes_2": (reduce_fusion("sum", "0", "2 didx, 8], mesh=[[0, 1]", "r2, 8(2 didx, 4)], mesh=[1, 0"), 2),
    "reduce_from_2d_on_one_device": (reduce_fusion("sum", "0", "1 didx, 8], mesh=[[0]", "r1, 8], mesh=[0"), 1),
    "reduce_max_from_2d_keeping_didx": (
        reduce_fusion("max", "0", "2 didy, 8(2 didx, 4)], mesh=[[0, 1], [2, 3]", "r2, 8], mesh=[0"), 4
    ),

    "reduce_scatter": (reduce_fusion("sum", "0", "2 didx, 8], mesh=[0, 1", "r2, 8(2 didx, 4)], mesh=[0, 1"), 2),
    "k_sharded_matmul_allreduce": (K_SHARDED_MATMUL, 2),
    "matmul_reduce_scatter": (MATMUL_REDUCE_SCATTER, 2),
    "matmul_reduce_scatter_rows_inside": (MATMUL_REDUCE_SCATTER_ROWS_INSIDE, 2),
    "stream_allgather": (STREAM_ALLGATHER, 2),
    "replicated_plus_sharded": (REPLICATED_PLUS_SHARDED, 2),  # each rank keeps its part of %a
    "sequence_parallel_linear_add": (SEQUENCE_PARALLEL_LINEAR_ADD, 2),
    # K sharded in one operand only: the other takes its K split (decompose-reshardings)
    "k_sharded_a_replicated_b_1": (matmul_fusion("4, 8(1 didx, 8)], mesh=[0", "8, 6], mesh=[0", "4, 6, r8], mesh=[0"), 1),
    "k_sharded_a_replicated_b": (matmul_fusion("4, 8(2 didx, 4)], mesh=[0, 1", "8, 6], mesh=[0, 1", "4, 6, r8"), 2),
    "k_sharded_a_n_sharded_b": (matmul_fusion("4, 8(2 didx, 4)], mesh=[0, 1", "8, 6(2 didx, 3)], mesh=[0, 1", "4, 6, r8"), 2),
    "linear_k_sharded_weight_4": (LINEAR_K_SHARDED_WEIGHT_4, 4),
    "k_didx_against_k_didy_4": (
        matmul_fusion(f"4, 8(2 didx, 4)], {MESH_2D}", f"8(2 didy, 4), 6], {MESH_2D}", f"4, 6, r8], {MESH_2D}"), 4
    ),
    # the reduced axis device-parallel in the result only: reduced locally, whole
    "k_sharded_in_the_result_only": (matmul_fusion("4, 8], mesh=[0, 1", "8, 6], mesh=[0, 1", "4, 6, r8(2 didx, 4)], mesh=[0, 1"), 2),
    "reduced_axis_sharded_in_the_result_only": (reduce_fusion("max", "1", "8, 4], mesh=[0, 1", "8, r4(2 didx, 2)], mesh=[0, 1"), 2),
    "two_consumers_one_allgather": (TWO_CONSUMERS, 2),
    "reshape_merging_the_sharded_outer_axis": (reshape_fusion("2 didx, 4], mesh=[0, 1", "8(2 didx, 4)], mesh=[0, 1"), 2),
    # 4 ranks: nvFuser's mesh pairs and 2-D meshes (one collective per mesh row)
    "allgather_loop_split_4": (set_fusion("16(4 didx, 4)], mesh=[0, 1, 2, 3", "16], mesh=[0, 1, 2, 3"), 4),
    "allgather_2d": (set_fusion("2 didy, 2 didx, 8], mesh=[[0, 1], [2, 3]", "2 didy, 2, 8], mesh=[[0, 1], [2, 3]"), 4),
    "allreduce_2d": (
        reduce_fusion("sum", "1", "2 didy, 2 didx, 8], mesh=[[0, 1], [2, 3]", "2 didy, r2, 8], mesh=[[0, 1], [2, 3]"), 4
    ),
    "reduce_scatter_2d": (
        reduce_fusion("sum", "1", "2 didy, 2 didx, 8], mesh=[[0, 1], [2, 3]", "2 didy, r2, 8(2 didx, 4)], mesh=[[0, 1], [2, 3]"), 4
    ),
    "gather_12_to_02": (set_fusion("2 didx, 8], mesh=[1, 2", "2, 8], mesh=[0, 2"), 4),  # root 0 holds no shard
    "scatter_02_to_12": (set_fusion("4, 8], mesh=[0, 2", "4(2 didx, 2), 8], mesh=[1, 2"), 4),
    "send_recv_12_to_01": (set_fusion("2 didx, 8], mesh=[1, 2", "2 didx, 8], mesh=[0, 1"), 4),
    "send_recv_12_to_10": (set_fusion("2 didx, 8], mesh=[1, 2", "2 didx, 8], mesh=[1, 0"), 4),
    "broadcast_0_to_all": (set_fusion("4, 8], mesh=[0", "4, 8], mesh=[0, 1, 2, 3"), 4),
    "reduce_01_to_12": (reduce_fusion("sum", "0", "2 didx, 8], mesh=[0, 1", "r2, 8], mesh=[1, 2"), 4),
    # all-to-all: a sharded axis moves ([D(i0), i1] -> [i0, D(i1)])
    "all_to_all": (set_fusion("2 didx, 8], mesh=[0, 1", "2, 8(2 didx, 4)], mesh=[0, 1"), 2),
    "all_to_all_split": (set_fusion("4(2 didx, 2), 6], mesh=[0, 1", "4, 6(2 didx, 3)], mesh=[0, 1"), 2),
    "all_to_all_split_4": (set_fusion("8(4 didx, 2), 12], mesh=[0, 1, 2, 3", "8, 12(4 didx, 3)], mesh=[0, 1, 2, 3"), 4),
    "all_to_all_inner_axes": (set_fusion("3, 4(2 didx, 2), 6], mesh=[0, 1", "3, 4, 6(2 didx, 3)], mesh=[0, 1"), 2),
    "reshape_merging_a_sharded_inner_axis": (reshape_fusion("2, 4(2 didx, 2)], mesh=[0, 1", "8(2 didx, 4)], mesh=[0, 1"), 2),
    # resharding on an inner axis (reorder-sharded-axis)
    "allgather_inner_axis": (set_fusion("4, 2 didx], mesh=[0, 1", "4, 2], mesh=[0, 1"), 2),
    "allgather_column_major": (set_fusion("4(2 didx, 2), 8], mesh=[0, 1], alloc=[1, 0", "4, 8], mesh=[0, 1"), 2),
    "scatter_inner_axis": (set_fusion("8, 4], mesh=[0", "8, 4(2 didx, 2)], mesh=[0, 1"), 2),
    "reduce_scatter_inner_axis": (reduce_fusion("sum", "0", "2 didx, 4, 8], mesh=[0, 1", "r2, 4, 8(2 didx, 4)], mesh=[0, 1"), 2),
    "allgather_inner_axis_4": (set_fusion("3, 8(4 didx, 2)], mesh=[0, 1, 2, 3", "3, 8], mesh=[0, 1, 2, 3"), 4),
    "scatter_in_a_loop_over_an_inner_axis_4": (set_fusion("8, 8], mesh=[0", "8(4 didx, 2), 8 stream], mesh=[0, 1, 2, 3"), 4),
    # DIDy on a 2-D mesh (teams are mesh columns), and both types at once
    "allgather_didy": (set_fusion(f"2 didy, 2 didx, 8], {MESH_2D}", f"2, 2 didx, 8], {MESH_2D}"), 4),
    "allgather_didy_inner_axis": (set_fusion(f"2 didx, 8, 2 didy], {MESH_2D}", f"2 didx, 8, 2], {MESH_2D}"), 4),
    "allreduce_didy": (reduce_fusion("sum", "0", f"2 didy, 2 didx, 8], {MESH_2D}", f"r2, 2 didx, 8], {MESH_2D}"), 4),
    "reduce_scatter_didy": (
        reduce_fusion("max", "0", f"2 didy, 2 didx, 8], {MESH_2D}", f"r2, 2 didx, 8(2 didy, 4)], {MESH_2D}"), 4
    ),
    "all_to_all_didy": (set_fusion(f"2 didy, 2 didx, 4], {MESH_2D}", f"2, 2 didx, 4(2 didy, 2)], {MESH_2D}"), 4),
    "scatter_didy_same_mesh": (set_fusion(f"2, 2 didx, 8], {MESH_2D}", f"2 didy, 2 didx, 8], {MESH_2D}"), 4),
    "gather_didx_and_didy": (set_fusion(f"2 didy, 2 didx, 8], {MESH_2D}", f"2, 2, 8], {MESH_2D}"), 4),
    "didy_then_didx": (set_fusion(f"2 didy, 2, 4], {MESH_2D}", f"2 didx, 2 didy, 4], {MESH_2D}"), 4),
    # DIDy behind a DIDx piece of the same axis (nvFuser's outer_split twice): within each
    # DIDx block, as if the axis were the block alone
    "allgather_didy_behind_didx": (set_fusion(f"8(2 didx, 2 didy, 2), 3], {MESH_2D}", f"8(2 didx, 4), 3], {MESH_2D}"), 4),
    "scatter_didy_behind_didx": (set_fusion(f"8(2 didx, 4), 3], {MESH_2D}", f"8(2 didx, 2 didy, 2), 3], {MESH_2D}"), 4),
    "allgather_didy_behind_didx_on_an_inner_axis": (  # reorder-sharded-axis lays the axis out first
        set_fusion(f"4, 3, 4(2 didx, 2 didy)], {MESH_2D}", f"4, 3, 4(2 didx, 2)], {MESH_2D}"), 4
    ),
    "allgather_didy_behind_didx_1x1": (set_fusion("8(1 didx, 1 didy, 8), 3], mesh=[[0]", "8(1 didx, 8), 3], mesh=[[0]"), 1),
    "allgather_didy_behind_didx_2x1": (set_fusion("8(1 didx, 2 didy, 4), 3], mesh=[[0], [1]", "8(1 didx, 8), 3], mesh=[[0], [1]"), 2),
    "gather_didy_behind_didx_then_didx": (set_fusion(f"8(2 didx, 2 didy, 2), 3], {MESH_2D}", f"8, 3], {MESH_2D}"), 4),
    # A reduction over both axes of a 2-D mesh: one reduction per device axis
    "allreduce_didy_and_didx": (reduce_fusion("sum", "0, 1", f"2 didy, 2 didx, 8], {MESH_2D}", f"r2, r2, 8], {MESH_2D}"), 4),
    "allreduce_then_reduce_scatter_2d": (
        reduce_fusion("sum", "0, 1", f"2 didy, 2 didx, 8], {MESH_2D}", f"r2, r2, 8(2 didx, 4)], {MESH_2D}"), 4
    ),
    "allreduce_didy_and_didx_1x1": (reduce_fusion("sum", "0, 1", "1 didy, 1 didx, 8], mesh=[[0]", "r1, r1, 8], mesh=[[0]"), 1),
    "allreduce_didy_and_didx_2x1": (
        reduce_fusion("sum", "0, 1", "2 didy, 4(1 didx, 4), 8], mesh=[[0], [1]", "r2, r4, 8], mesh=[[0], [1]"), 2
    ),
    # A device split with a local piece of 1 (2(2 didx, 1)): its rFactor's reshape gives the
    # extent-1 axis to the group before it, not to the DIDy axis after it
    "sum_over_a_split_with_a_local_one_2d": (
        reduce_fusion("sum", "0, 1", f"2(2 didx, 1), 8(2 didy, 4)], {MESH_2D}", f"r2, r8], {MESH_2D}"), 4
    ),
    "sum_over_a_split_with_a_local_one_2x1": (
        reduce_fusion("sum", "0, 1", "1(1 didx, 1), 8(2 didy, 4)], mesh=[[0], [1]", "r1, r8], mesh=[[0], [1]"), 2
    ),
    "sum_over_a_split_with_a_local_one_1x1": (
        reduce_fusion("sum", "0, 1", "1(1 didx, 1), 8(1 didy, 8)], mesh=[[0]", "r1, r8], mesh=[[0]"), 1
    ),
    "max_over_split_axes_2d": (
        reduce_fusion("max", "0, 2", f"8(2 didy, 4), 3, 6(2 didx, 3)], {MESH_2D}", f"r8, 3, r6], {MESH_2D}"), 4
    ),
    # 2x4 and 4x2 meshes: one collective on each row (or column), every rank resolving its own
    "matmul_allreduce_2x4": (matmul_allreduce_2d(2, 4), 8),
    "matmul_allreduce_4x2": (matmul_allreduce_2d(4, 2), 8),
    "allgather_didy_4x2": (set_fusion(f"4 didy, 2 didx, 8], {grid(4, 2)}", f"4, 2 didx, 8], {grid(4, 2)}"), 8),
    "reduce_scatter_didx_2x4": (
        reduce_fusion("sum", "1", f"2 didy, 4 didx, 8], {grid(2, 4)}", f"2 didy, r4, 8(4 didx, 2)], {grid(2, 4)}"), 8
    ),
    "scatter_didy_4x2": (set_fusion(f"4, 2 didx, 8], {grid(4, 2)}", f"4 didy, 2 didx, 8], {grid(4, 2)}"), 8),
    # P2P DID -> Stream pipeline: a ring of shifts
    "p2p_matmul": (p2p_matmul("0, 1"), 2),
    "p2p_matmul_4": (p2p_matmul("0, 1, 2, 3"), 4),
    "p2p_matmul_mesh_21": (p2p_matmul("2, 1"), 4),  # ranks 0 and 3 are outside the ring
}

EXPECTED_COLLECTIVE = {
    "allgather_add": "hir.allgather", "gather_to_0": "hir.gather", "scatter_from_0": "hir.scatter",
    "scatter_from_outside_the_mesh": "hir.broadcast", "send_recv_mesh_sizes": "hir.broadcast",
    "gather_from_2d": "hir.broadcast", "broadcast_to_2d": "hir.broadcast",
    "broadcast_to_a_mesh_within": "hir.broadcast", "broadcast_to_an_overlapping_mesh": "hir.broadcast",
    "send_recv_swap": "hir.send_recv", "broadcast": "hir.broadcast", "allreduce_sum": "hir.allreduce",
    "reduce_to_0": "hir.reduce ", "reduce_scatter": "hir.reduce_scatter",
    "k_sharded_matmul_allreduce": "hir.allreduce", "matmul_reduce_scatter": "hir.reduce_scatter",
    "allreduce_then_reduce_scatter_2d": "hir.reduce_scatter",
    "matmul_reduce_scatter_rows_inside": "alloc=[2, 0, 1, 3, 4, 5]> -> !fusion.tensor<f32[3, r2, 2 didx, 4, 6]",
    "k_sharded_a_replicated_b": "hir.local_shard %b", "k_sharded_a_n_sharded_b": "hir.all_to_all",
    "linear_k_sharded_weight_4": "hir.local_shard", "k_didx_against_k_didy_4": "hir.allgather %b",
    "relu_exp": "hir.post_on_stream", "stream_allgather": "hir.allgather",
    "replicated_plus_sharded": "hir.local_shard %a -> %0 axis 1 team [0, 1]",
    "sequence_parallel_linear_add": "hir.reduce_scatter",
    "two_consumers_one_allgather": "hir.allgather",
    "gather_12_to_02": "hir.gather %a -> %b team [1, 2, 0] root 0",
    "all_to_all": "hir.all_to_all %a -> %b team [0, 1]", "all_to_all_split": "hir.all_to_all",
    "reshape_merging_a_sharded_inner_axis": "hir.all_to_all", "all_to_all_didy": "hir.all_to_all %a -> %b team [[0, 1], [2, 3]] along didy",
    "allgather_inner_axis": "hir.allgather %a -> %b team [0, 1] : !fusion.tensor<f32[4, 2 didx], mesh=[0, 1]> -> "
                            "!fusion.tensor<f32[4, 2], mesh=[0, 1], alloc=[1, 0]>",
    "scatter_inner_axis": "hir.scatter", "reduce_scatter_inner_axis": "hir.reduce_scatter",
    "allgather_didy": "hir.allgather %a -> %b team [[0, 1], [2, 3]] along didy",
    "allreduce_didy": "hir.allreduce %a -> %b team [[0, 1], [2, 3]] along didy",
    "reduce_scatter_didy": "hir.reduce_scatter %a -> %b team [[0, 1], [2, 3]] along didy",
    "scatter_didy_same_mesh": "hir.local_shard %a -> %b axis 0 team [[0, 1], [2, 3]] along didy",
    "gather_didx_and_didy": "team [[0, 1], [2, 3]] along didy", "didy_then_didx": "hir.all_to_all",
    "p2p_matmul": "hir.shift %a", "p2p_matmul_mesh_21": "hir.team_position team [2, 1]",
    "matmul_allreduce_2x4": "hir.allreduce %u -> %c team [[0, 1, 2, 3], [4, 5, 6, 7]] along didx op sum",
    "matmul_allreduce_4x2": "hir.allreduce %u -> %c team [[0, 1], [2, 3], [4, 5], [6, 7]] along didx op sum",
    "allgather_didy_4x2": "hir.allgather %a -> %b team [[0, 1], [2, 3], [4, 5], [6, 7]] along didy",
    "reduce_scatter_didx_2x4": "team [[0, 1, 2, 3], [4, 5, 6, 7]] along didx",
    "scatter_didy_4x2": "hir.local_shard %a -> %b axis 0 team [[0, 1], [2, 3], [4, 5], [6, 7]] along didy",
}

# Fusions run with each pass of the pipeline disabled in turn.
DISABLED_PASS_CASES = (
    "allgather_add", "k_sharded_matmul_allreduce", "stream_allgather", "relu_exp", "broadcast",
    "all_to_all_split", "allgather_inner_axis", "reduce_scatter_inner_axis", "gather_didx_and_didy", "p2p_matmul",
)
PASS_NAMES = PIPELINES["hostir-lower"]
AS_WRITTEN = "hostir-lower{transport=nccl}"
"""NCCL's collectives and every Stream pipeline as written: the decision table under test."""


@dataclass
class Prepared:
    """A lowered program with its inputs and what it must compute."""

    program: str
    output_types: list[TensorType]
    per_rank_inputs: list[list]
    expected: list[torch.Tensor]


def prepare(fusion_text: str, world_size: int, disabled: str | None = None, seed: int = 0,
            pipeline: str = AS_WRITTEN) -> Prepared:
    fusion_module = parse_module(fusion_text)
    generator = torch.Generator().manual_seed(seed)
    arg_types = [a.type for a in fusion_module.ops.first.args]  # type: ignore[union-attr]
    global_inputs = [torch.rand(at.value_shape(), generator=generator) * 2 - 1 for at in arg_types]
    expected = runtime.run_fusion(fusion_module, global_inputs)
    options = PassManagerOptions(disabled=frozenset({disabled} if disabled else ()))
    lowered = passes.lower(parse_module(fusion_text), options, pipeline)
    (program,) = [op for op in lowered.ops if isinstance(op, hir.ProgramOp)]
    per_rank = [[runtime.shard_tensor(g, at, r) for g, at in zip(global_inputs, arg_types)] for r in range(world_size)]
    return Prepared(str(lowered), list(program.function_type.outputs.data), per_rank, expected)


@dataclass
class Ran:
    outputs: list[torch.Tensor]
    """The global outputs (every rank's shards reassembled)."""
    posted: list[list[str]]
    """Per rank, the ops that posted device work (collectives, kernels), in order."""


def run_batch(prepared: dict[str, Prepared], world_size: int) -> dict[str, Ran]:
    """Run every program on `world_size` ranks in one launch."""
    names = list(prepared)
    jobs = [
        runtime.Job(prepared[n].program, prepared[n].per_rank_inputs, number_of_streams=2, record_streams=True)
        for n in names
    ]
    results = runtime.run_spmd_batch(jobs, world_size, backend="gloo")
    return {
        name: Ran(
            [
                runtime.unshard([rank.outputs[i] for rank in per_rank], out_type)
                for i, out_type in enumerate(prepared[name].output_types)
            ],
            [[op for op, _ in rank.stream_log or []] for rank in per_rank],
        )
        for name, per_rank in zip(names, results)
    }


def assert_matches(name: str, outputs: list[torch.Tensor], expected: list[torch.Tensor]) -> None:
    assert len(outputs) == len(expected), name
    for got, want in zip(outputs, expected):
        assert got.shape == want.shape, f"{name}: shape {list(got.shape)} != {list(want.shape)}"
        torch.testing.assert_close(got, want, **TOLERANCE, msg=lambda m: f"{name}: {m}")


@dataclass
class Outcome:
    error: str | None = None
    prepared: Prepared | None = None


def lower_or_refuse(name: str, disabled: str) -> Outcome:
    """Lower with `disabled` off; a lowering or compile-time refusal is the error."""
    text, world = CASES[name]
    try:
        prepared = prepare(text, world, disabled)
    except HostIRError as error:
        return Outcome(error=str(error))
    module = parse_module(prepared.program)
    if not any(isinstance(op, hir.CollectiveOp) for op in module.walk()):
        # No collective: compiling needs no process group, so each rank can be checked here.
        try:
            for rank in range(world):
                runtime.compile_program(module, rank=rank, world_size=world)
        except HostIRError as error:
            return Outcome(error=str(error))
    return Outcome(prepared=prepared)


# --------------------------------------------------------------------------- #
# All communication types, on 2 and 4 ranks
# --------------------------------------------------------------------------- #


@pytest.fixture(scope="module")
def lowered() -> dict[str, Prepared]:
    return {name: prepare(text, world) for name, (text, world) in CASES.items()}


@pytest.fixture(scope="module")
def disabled_outcomes() -> dict[tuple[str, str], Outcome]:
    """(fusion, disabled pass) -> the refusal, or the program to run."""
    return {(n, p): lower_or_refuse(n, p) for n in DISABLED_PASS_CASES for p in PASS_NAMES}


@pytest.fixture(scope="module")
def ran(lowered, disabled_outcomes) -> dict[str, Ran]:
    """name (or "fusion|disabled pass") -> what it computed; one launch per world size."""
    batches: dict[int, dict[str, Prepared]] = {}
    for name, prepared in lowered.items():
        batches.setdefault(CASES[name][1], {})[name] = prepared
    for (name, pass_name), outcome in disabled_outcomes.items():
        if outcome.prepared is not None:
            batches.setdefault(CASES[name][1], {})[f"{name}|{pass_name}"] = outcome.prepared
    results: dict[str, Ran] = {}
    for world, batch in sorted(batches.items()):
        results |= run_batch(batch, world)
    return results


@pytest.fixture(scope="module")
def outputs(ran) -> dict[str, list[torch.Tensor]]:
    return {name: result.outputs for name, result in ran.items()}


@pytest.mark.parametrize("name", sorted(EXPECTED_COLLECTIVE))
def test_lowering_uses_the_expected_communication(lowered, name):
    assert EXPECTED_COLLECTIVE[name] in lowered[name].program


@pytest.mark.parametrize("name", list(CASES))
def test_lowered_program_matches_eager_reference(lowered, outputs, name):
    assert_matches(name, outputs[name], lowered[name].expected)


@pytest.mark.parametrize("name", ["k_sharded_in_the_result_only", "reduced_axis_sharded_in_the_result_only"])
def test_a_reduction_of_axes_every_device_holds_communicates_nothing(lowered, name):
    assert "team" not in lowered[name].program


def test_a_2d_program_is_the_same_ops_on_any_mesh():
    """A collective on each row is one op whose team each rank resolves: 2x2 and 32x32
    lower to the same ops (72 ops on 32x16 when each row had its own)."""

    def ops(rows: int, columns: int) -> list[str]:
        program = passes.lower(parse_module(matmul_allreduce_2d(rows, columns)))
        return [op.name for op in program.walk()]

    assert ops(2, 2) == ops(32, 32)
    assert ops(2, 2).count("hir.allreduce") == 1


def test_a_value_resharded_for_two_consumers_is_gathered_once(lowered, ran):
    assert lowered["two_consumers_one_allgather"].program.count("hir.allgather") == 1
    posted = ran["two_consumers_one_allgather"].posted
    assert [log.count("hir.allgather") for log in posted] == [1, 1], posted


# --------------------------------------------------------------------------- #
# The pipeline with each pass disabled in turn
# --------------------------------------------------------------------------- #


@pytest.mark.parametrize("pass_name", PASS_NAMES)
def test_disabling_a_pass_never_gives_a_wrong_answer(disabled_outcomes, outputs, pass_name):
    for name in DISABLED_PASS_CASES:
        outcome = disabled_outcomes[(name, pass_name)]
        if outcome.error is not None:
            # a located diagnostic naming the op, not a traceback
            assert "error: '" in outcome.error, f"{name} without {pass_name}: {outcome.error}"
        else:
            assert outcome.prepared is not None
            assert_matches(f"{name} without {pass_name}", outputs[f"{name}|{pass_name}"], outcome.prepared.expected)


def test_disabling_a_required_pass_is_refused(disabled_outcomes):
    """The test above is not vacuous: without these passes the allgather cannot run."""
    for pass_name in ("lower-to-host", "convert-op-to-communication"):
        assert disabled_outcomes[("allgather_add", pass_name)].error is not None, pass_name


def test_disabling_reorder_sharded_axis_refuses_inner_axes(disabled_outcomes):
    """Without reorder-sharded-axis the buffers are laid out wrongly for the collectives:
    refused, never computed."""
    for name in ("all_to_all_split", "allgather_inner_axis", "reduce_scatter_inner_axis"):
        error = disabled_outcomes[(name, "reorder-sharded-axis")].error
        assert error is not None and "reorder-sharded-axis" in error, (name, error)


def test_disabling_reorder_sharded_axis_runs_a_stream_loop_over_an_inner_axis_whole():
    """Its chunks would be strided in their buffers: stream-parallel-type runs the scatter
    whole, outside any loop (a collective moves dense chunks), which computes what torch does."""
    outcome = lower_or_refuse("scatter_in_a_loop_over_an_inner_axis_4", "reorder-sharded-axis")
    assert outcome.prepared is not None, outcome.error
    assert "scf.for" not in outcome.prepared.program and "hir.scatter" in outcome.prepared.program
    ran = run_batch({"whole": outcome.prepared}, CASES["scatter_in_a_loop_over_an_inner_axis_4"][1])["whole"]
    assert_matches("scatter_in_a_loop_over_an_inner_axis_4 without reorder-sharded-axis", ran.outputs,
                   outcome.prepared.expected)


# --------------------------------------------------------------------------- #
# Two nodes of two ranks (docs/multi_node.md)
# --------------------------------------------------------------------------- #

ACROSS, WITHIN = "4 didx, 8], mesh=[0, 1, 2, 3", "2 didx, 8], mesh=[2, 3"
TWO_ALLGATHERS = f"""fusion.func @f(%a: {t(ACROSS)}, %b: {t(WITHIN)}) -> ({t('4, 8], mesh=[0, 1, 2, 3')}, {t('2, 8], mesh=[2, 3')}) {{
  %g = fusion.set %a : {t(ACROSS)} -> {t('4, 8], mesh=[0, 1, 2, 3')}
  %s = fusion.add %g, %g : {t('4, 8], mesh=[0, 1, 2, 3')}, {t('4, 8], mesh=[0, 1, 2, 3')} -> {t('4, 8], mesh=[0, 1, 2, 3')}
  %h = fusion.set %b : {t(WITHIN)} -> {t('2, 8], mesh=[2, 3')}
  %u = fusion.add %h, %h : {t('2, 8], mesh=[2, 3')}, {t('2, 8], mesh=[2, 3')} -> {t('2, 8], mesh=[2, 3')}
  fusion.return %s, %u : {t('4, 8], mesh=[0, 1, 2, 3')}, {t('2, 8], mesh=[2, 3')}
}}"""


def transports(program: str) -> dict[str, str]:
    """Each all-gather's team -> its transport."""
    return {line.split(" team ")[1].split(" :")[0].removesuffix(" transport copy_engine"):
            "copy_engine" if "transport copy_engine" in line else "nccl"
            for line in program.splitlines() if "hir.allgather" in line}


def test_two_nodes_of_two_ranks_take_nccl_across_nodes_and_copy_engines_within(monkeypatch):
    """4 CPU ranks as 2 nodes x 2: an all-gather over all four spans the nodes and stays on
    NCCL; one over ranks 2 and 3 takes the copy engines (auto: they are faster for an
    all-gather of any size on h200x2). On one node both take the copy engines. The
    program computes what eager torch does."""
    auto = "hostir-lower{transport=auto machine=h200x2"
    one_node = prepare(TWO_ALLGATHERS, 4, pipeline=auto + "}")
    assert transports(one_node.program) == {"[0, 1, 2, 3]": "copy_engine", "[2, 3]": "copy_engine"}
    two_nodes = prepare(TWO_ALLGATHERS, 4, pipeline=auto + " ranks-per-node=2}")
    assert transports(two_nodes.program) == {"[0, 1, 2, 3]": "nccl", "[2, 3]": "copy_engine"}
    monkeypatch.setenv("LOCAL_WORLD_SIZE", "2")  # torchrun's, on every rank of the launch
    assert prepare(TWO_ALLGATHERS, 4, pipeline=auto + "}").program == two_nodes.program
    ran = run_batch({"two nodes": two_nodes}, 4)["two nodes"]
    assert_matches("two nodes", ran.outputs, two_nodes.expected)


def test_copy_engines_refuse_a_team_that_spans_nodes():
    with pytest.raises(HostIRError, match=r"'fusion.set' op cannot communicate on the copy engines: its team spans "
                                          r"nodes of 2 ranks each"):
        prepare(TWO_ALLGATHERS, 4, pipeline="hostir-lower{transport=copy-engine ranks-per-node=2}")
