"""Every defect the differential tester found, as a named reproducer (TRIAGE.md, issue 12's
numbered defects). test_differential.py runs each through the pipeline (with the pass
that exposed it disabled, where one was) on its world size and checks the outcome: the
program computes what eager torch computes, or is refused on every rank.

A new failure found by the tester is added here under its own name, with the source
`harness.py --shrink` prints and the outcome the fix gives.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Regression:
    world_size: int
    source: str
    outcome: str
    """What the fixed pipeline gives: "correct", or "refused" (on every rank)."""
    disabled: str | None = None
    """The pass (or "+"-joined passes) left out, as in harness.DISABLED_VARIANTS."""
    lowering: str = "nccl"
    """The lowering options, as `harness.Lowering` prints them ("copy-engine+bounded")."""


def _gather_of_a_transposed_shard(rows: int) -> str:
    return f"""
with FusionDefinition() as fd:
    a = fd.define_tensor([{rows}, 6], dtype='float32')
    b = fd.ops.set(a)
    fd.add_output(b)
mesh = DeviceMesh([0, 1])
a.set_device_mesh(mesh)
a.outer_split(0, 2)
a.axis(0).parallelize(ParallelType.DIDx)
a.set_allocation_order([1, 0])
b.set_device_mesh(mesh)
"""


REGRESSIONS = {
    # Issue 25: the sequence-parallel MLP block with copy engines and bounded
    # intermediates gave wrong numbers on GPUs. The all-gather's output, allocated per
    # iteration, became one symmetric buffer (acquired from the peers, not from an
    # allocator) that every iteration reused on its own stream while earlier iterations
    # still read it. CPU ranks ran it in program order and were right; with the stream
    # hazard check they fail, and the fix gives each iteration its own slice.
    "mlp_block_on_copy_engines_with_bounded_intermediates": Regression(2, """
with FusionDefinition() as fd:
    x = fd.define_tensor([4, 2, 2, 8], dtype='float32')
    w1 = fd.define_tensor([8, 8], dtype='float32')
    w2 = fd.define_tensor([8, 8], dtype='float32')
    g = fd.ops.matmul(x, w1)
    t = fd.ops.tanh(g)
    y = fd.ops.matmul(t, w2)
    fd.add_output(y)
mesh = DeviceMesh([0, 1])
x.set_device_mesh(mesh)
w1.set_device_mesh(mesh)
w2.set_device_mesh(mesh)
g.set_device_mesh(mesh)
t.set_device_mesh(mesh)
y.set_device_mesh(mesh)
x.axis(1).parallelize(ParallelType.DIDx)
w1.outer_split(1, 2)
w1.axis(1).parallelize(ParallelType.DIDx)
w2.outer_split(0, 2)
w2.axis(0).parallelize(ParallelType.DIDx)
g.axis(0).parallelize(ParallelType.Stream)
g.outer_split(3, 2)
g.axis(3).parallelize(ParallelType.DIDx)
t.axis(0).parallelize(ParallelType.Stream)
t.outer_split(3, 2)
t.axis(3).parallelize(ParallelType.DIDx)
y.axis(0).parallelize(ParallelType.Stream)
y.axis(1).parallelize(ParallelType.DIDx)
""", "correct", lowering="copy-engine+bounded"),
    "W1_int32_sum_keeps_its_type": Regression(2, """
with FusionDefinition() as fd:
    a = fd.define_tensor([4], dtype='int32')
    s = fd.ops.sum(a, dims=[0])
    fd.add_output(s)
mesh = DeviceMesh([0, 1])
a.set_device_mesh(mesh)
a.outer_split(0, 2)
a.axis(0).parallelize(ParallelType.DIDx)
""", "correct"),
    "W2_fusion_without_host_program_is_refused": Regression(2, """
with FusionDefinition() as fd:
    a = fd.define_tensor([4, 8], dtype='float32')
    b = fd.ops.neg(a)
    fd.add_output(b)
mesh = DeviceMesh([0, 1])
a.set_device_mesh(mesh)
b.set_device_mesh(mesh)
b.outer_split(0, 2)
b.axis(0).parallelize(ParallelType.DIDx)
""", "refused", "lower-to-host+convert-op-to-communication"),
    "W3_mixed_meshes_without_finalize": Regression(2, """
with FusionDefinition() as fd:
    a = fd.define_tensor([1, 3, 3], dtype='float32')
    w = fd.define_tensor([3, 2], dtype='float32')
    m = fd.ops.matmul(a, w)
    b = fd.ops.abs(w)
    fd.add_output(b)
a.set_device_mesh(DeviceMesh([0]))
""", "correct", "finalize-multidevice-domains"),
    "C1_matrix_vector_matmul": Regression(1, """
with FusionDefinition() as fd:
    a = fd.define_tensor([2, 4], dtype='float32')
    b = fd.define_tensor([4], dtype='float32')
    c = fd.ops.matmul(a, b)
    fd.add_output(c)
""", "correct"),
    "C2_rfactor_of_a_1d_operand": Regression(2, """
with FusionDefinition() as fd:
    a = fd.define_tensor([4], dtype='float32')
    b = fd.define_tensor([4, 8], dtype='float32')
    c = fd.ops.matmul(a, b)
    fd.add_output(c)
mesh = DeviceMesh([0, 1])
a.set_device_mesh(mesh)
a.outer_split(0, 2)
a.axis(0).parallelize(ParallelType.DIDx)
b.set_device_mesh(mesh)
b.outer_split(0, 2)
b.axis(0).parallelize(ParallelType.DIDx)
""", "correct"),
    "C3_dynamic_extent_with_allocation_order": Regression(1, """
with FusionDefinition() as fd:
    a = fd.define_tensor([-1, 4], dtype='float32')  # concrete: [2, 4]
    b = fd.ops.neg(a)
    fd.add_output(b)
b.set_allocation_order([1, 0])
""", "correct"),
    "C4_reshape_sharding_the_inner_part_of_a_split": Regression(2, """
with FusionDefinition() as fd:
    a = fd.define_tensor([8], dtype='float32')
    b = fd.ops.reshape(a, [2, 4])
    fd.add_output(b)
mesh = DeviceMesh([0, 1])
a.set_device_mesh(mesh)
b.set_device_mesh(mesh)
b.outer_split(1, 2)
b.axis(1).parallelize(ParallelType.DIDx)
""", "correct"),  # refused before reorder-sharded-axis (main's reshard) laid the buffers out
    "C5_fresh_result_of_a_permuted_input_is_dense": Regression(2, """
with FusionDefinition() as fd:
    a = fd.define_tensor([4, 6], dtype='float32')
    b = fd.ops.neg(a)
    c = fd.ops.neg(b)
    fd.add_output(c)
mesh = DeviceMesh([0, 1])
a.set_device_mesh(mesh)
a.outer_split(0, 2)
a.axis(0).parallelize(ParallelType.DIDx)
a.set_allocation_order([1, 0])
b.set_device_mesh(mesh)
b.outer_split(0, 2)
b.axis(0).parallelize(ParallelType.DIDx)
c.set_device_mesh(mesh)
""", "correct"),
    "C6_stream_units_of_a_dead_chain": Regression(1, """
with FusionDefinition() as fd:
    a = fd.define_tensor([3], dtype='float32')
    b = fd.ops.broadcast(a, [True, False])
    p = fd.ops.eq(b, -0.5)
    c = fd.ops.cast(p, dtype='float32')
    fd.add_output(b)
mesh = DeviceMesh([0])
a.set_device_mesh(mesh)
b.set_device_mesh(mesh)
p.set_device_mesh(mesh)
c.set_device_mesh(mesh)
p.axis(1).parallelize(ParallelType.Stream)
c.axis(1).parallelize(ParallelType.Stream)
""", "correct"),
    "defect6_stream_matmul_feeding_a_kernel_unit": Regression(1, """
with FusionDefinition() as fd:
    a = fd.define_tensor([3, 2, 1], dtype='float32')
    b = fd.define_tensor([1, 2], dtype='float32')
    c = fd.ops.matmul(a, b)
    d = fd.ops.cast(c, dtype='float64')
    fd.add_output(d)
c.axis(0).parallelize(ParallelType.Stream)
""", "correct"),
    "defect7_matmul_into_an_allocation_order": Regression(1, """
with FusionDefinition() as fd:
    a = fd.define_tensor([8, 2, 4, 1], dtype='float32')
    b = fd.define_tensor([1, 1], dtype='float32')
    c = fd.ops.matmul(a, b)
    fd.add_output(c)
c.set_allocation_order([0, 2, 3, 1, 4])
""", "correct"),
    "C7_stream_axis_without_stream_loops": Regression(2, """
with FusionDefinition() as fd:
    a = fd.define_tensor([6, 3], dtype='float32')
    b = fd.ops.select(a, 1, dim=1)
    fd.add_output(b)
mesh = DeviceMesh([0, 1])
a.set_device_mesh(mesh)
a.outer_split(0, 2)
a.axis(0).parallelize(ParallelType.DIDx)
b.set_device_mesh(mesh)
b.axis(0).parallelize(ParallelType.Stream)
""", "refused", "stream-parallel-type"),
    "C8_unlowered_set_between_meshes": Regression(2, """
with FusionDefinition() as fd:
    a = fd.define_tensor([4], dtype='float32')
    b = fd.ops.neg(a)
    c = fd.ops.neg(b)
    fd.add_output(c)
a.set_device_mesh(DeviceMesh([1]))
b.set_device_mesh(DeviceMesh([1]))
c.set_device_mesh(DeviceMesh([0]))
""", "refused", "convert-op-to-communication"),
    "fixed_point_mesh_propagation": Regression(2, """
with FusionDefinition() as fd:
    a = fd.define_tensor([4, 8], dtype='float32')
    m = fd.define_tensor([4, 8], dtype='float32')
    b = fd.ops.relu(a)
    c = fd.ops.add(fd.ops.relu(a), m)
    fd.add_output(b)
    fd.add_output(c)
m.set_device_mesh(DeviceMesh([0, 1]))
""", "correct"),
    "stream_kernel_unit_feeding_a_matmul": Regression(1, """
with FusionDefinition() as fd:
    a = fd.define_tensor([4, 6], dtype='float32')
    w = fd.define_tensor([6, 3], dtype='float32')
    r = fd.ops.relu(a)
    c = fd.ops.matmul(r, w)
    fd.add_output(c)
c.axis(0).parallelize(ParallelType.Stream)
""", "correct"),
    "dead_chain_without_a_mesh_joins_the_only_mesh": Regression(4, """
with FusionDefinition() as fd:
    t0 = fd.define_tensor([8], dtype='float32')
    t1 = fd.define_tensor([1, 4], dtype='float32')
    t2 = fd.ops.squeeze(t1, dims=[0])
    t3 = fd.ops.ne(t0, 0.0)
    t4 = fd.ops.cast(t3, dtype='float32')
    t5 = fd.ops.set(t2)
    fd.add_output(t5)
    fd.add_output(t2)
mesh = DeviceMesh([0, 1, 2, 3])
t2.set_device_mesh(mesh)
t2.axis(0).parallelize(ParallelType.DIDx)
""", "correct"),
    # Rows 2: the gathered axis has local extent 1, the layout contract holds; rows 4: it
    # does not, and reorder-sharded-axis lays the buffers out for the collective (refused
    # before main's reshard).
    "allocation_order_on_a_gathered_input": Regression(2, _gather_of_a_transposed_shard(2), "correct"),
    "allocation_order_that_breaks_the_collective_layout": Regression(2, _gather_of_a_transposed_shard(4), "correct"),
    # Branch refusals: a contraction whose K only one operand shards (the other takes the
    # split), and a dynamic destination allocated with its extent read from the input.
    "k_sharded_in_one_operand_only": Regression(4, """
with FusionDefinition() as fd:
    a = fd.define_tensor([-1, 8], dtype='float32')  # concrete: [6, 8]
    b = fd.define_tensor([8, 8], dtype='float32')
    c = fd.ops.matmul(a, b)
    fd.add_output(c)
mesh = DeviceMesh([0, 1, 2, 3])
a.set_device_mesh(mesh)
b.set_device_mesh(mesh)
b.outer_split(0, 4)
b.axis(0).parallelize(ParallelType.DIDx)
""", "correct"),
    "dynamic_destination_of_a_gather": Regression(2, """
with FusionDefinition() as fd:
    a = fd.define_tensor([4, 6, -1], dtype='bfloat16')  # concrete: [4, 6, 6]
    b = fd.ops.abs(a)
    c = fd.ops.add(b, 0.5)
    d = fd.ops.pow(c, a)
    fd.add_output(d)
mesh = DeviceMesh([0, 1])
a.set_device_mesh(mesh)
a.outer_split(2, 2)
a.axis(2).parallelize(ParallelType.DIDx)
c.set_allocation_order([2, 0, 1])
d.set_device_mesh(mesh)
""", "correct"),
    # Found by the tester while lifting the first: the rFactor's partial product typed on
    # the input's 1-D mesh with the result's DIDy (an invalid type, a crash); now refused.
    "contraction_operands_on_a_1d_and_a_2d_mesh": Regression(4, """
with FusionDefinition() as fd:
    x = fd.define_tensor([6], dtype='float32')
    w = fd.define_tensor([4, 6], dtype='float32')
    y = fd.ops.linear(x, w)
    fd.add_output(y)
x.set_device_mesh(DeviceMesh([0, 1]))
x.outer_split(0, 2)
x.axis(0).parallelize(ParallelType.DIDx)
w.set_device_mesh(DeviceMesh([[0, 1], [2, 3]]))
y.set_device_mesh(DeviceMesh([[0, 1], [2, 3]]))
y.outer_split(0, 2)
y.axis(0).parallelize(ParallelType.DIDy)
""", "refused"),
    # The long profile (3,000 programs, seed 1): outputs whose declared layout the
    # lowering dropped, a split-K sum cast up, a mesh given by propagation.
    "K_sharded_linear_with_bias_keeps_its_output_layout": Regression(2, """
with FusionDefinition() as fd:
    x = fd.define_tensor([2, 4], dtype='float32')
    w = fd.define_tensor([3, 4], dtype='float32')
    b = fd.define_tensor([3], dtype='float32')
    y = fd.ops.linear(x, w, bias=b)
    fd.add_output(y)
mesh = DeviceMesh([0, 1])
x.set_device_mesh(mesh)
w.set_device_mesh(mesh)
w.outer_split(1, 2)
w.axis(1).parallelize(ParallelType.DIDx)
b.set_device_mesh(mesh)
y.set_device_mesh(mesh)
y.set_allocation_order([1, 2, 0])
""", "correct"),
    "K_sharded_matmul_keeps_its_output_layout": Regression(2, """
with FusionDefinition() as fd:
    a = fd.define_tensor([3, 4], dtype='float32')
    b = fd.define_tensor([4, 2], dtype='float32')
    c = fd.ops.matmul(a, b)
    fd.add_output(c)
mesh = DeviceMesh([0, 1])
a.set_device_mesh(mesh)
a.outer_split(1, 2)
a.axis(1).parallelize(ParallelType.DIDx)
b.set_device_mesh(mesh)
c.set_device_mesh(mesh)
c.set_allocation_order([1, 0, 2])
""", "correct"),
    "resharded_result_keeps_its_layout": Regression(2, """
with FusionDefinition() as fd:
    a = fd.define_tensor([1, 2, 1], dtype='float32')
    b = fd.ops.reshape(a, [1, 1, 2, 1])
    fd.add_output(b)
mesh = DeviceMesh([0, 1])
a.set_device_mesh(mesh)
b.set_device_mesh(mesh)
b.axis(2).parallelize(ParallelType.DIDx)
b.set_allocation_order([3, 1, 0, 2])
""", "correct"),
    "split_K_float32_sum_cast_to_float64": Regression(4, """
with FusionDefinition() as fd:
    a = fd.define_tensor([-1], dtype='float32')  # concrete: [8]
    b = fd.define_tensor([2, 8, 8], dtype='float32')
    c = fd.ops.matmul(a, b)
    d = fd.ops.cast(c, dtype='float64')
    fd.add_output(d)
mesh = DeviceMesh([[0, 1], [2, 3]])
a.set_device_mesh(mesh)
a.outer_split(0, 2)
a.axis(0).parallelize(ParallelType.DIDy)
b.set_device_mesh(mesh)
b.outer_split(2, 2)
b.axis(2).parallelize(ParallelType.DIDx)
d.set_device_mesh(mesh)
""", "correct"),
    "unplaced_stream_output_takes_its_producers_mesh": Regression(2, """
with FusionDefinition() as fd:
    a = fd.define_tensor([2, 6], dtype='float64')
    m = fd.ops.max(a, dims=[0])
    fd.add_output(m)
a.set_device_mesh(DeviceMesh([0, 1]))
m.outer_split(1, 3)
m.axis(1).parallelize(ParallelType.Stream)
""", "correct"),
    # A dynamic extent hides how a reshape groups axes: [8, 8, ?] -> [8, ?, 4, 3] had its
    # sharded 4 mapped onto the dynamic input axis (3 at run time), and a scatter dropped data.
    "reshape_pairs_no_axes_across_a_dynamic_extent": Regression(2, """
with FusionDefinition() as fd:
    a = fd.define_tensor([8, 8, -1], dtype='float32')  # concrete: [8, 8, 3]
    b = fd.ops.reshape(a, [8, -1, 4, 3])
    fd.add_output(b)
mesh = DeviceMesh([0, 1])
a.set_device_mesh(mesh)
b.set_device_mesh(mesh)
b.outer_split(2, 2)
b.axis(2).parallelize(ParallelType.DIDx)
""", "correct"),
    "dynamic_extent_its_split_does_not_divide_is_refused_before_running": Regression(2, """
with FusionDefinition() as fd:
    a = fd.define_tensor([-1], dtype='float32')  # concrete: [3]
    b = fd.ops.relu(a)
    fd.add_output(b)
mesh = DeviceMesh([0, 1])
a.set_device_mesh(mesh)
b.set_device_mesh(mesh)
b.outer_split(0, 2)
b.axis(0).parallelize(ParallelType.DIDx)
""", "refused"),
    "reordering_a_stream_on_an_inner_split_is_refused_at_the_op": Regression(2, """
with FusionDefinition() as fd:
    a = fd.define_tensor([4, 2], dtype='float32')
    b = fd.ops.sum(a, dims=[1])
    fd.add_output(b)
mesh = DeviceMesh([0, 1])
a.set_device_mesh(mesh)
a.axis(1).parallelize(ParallelType.DIDx)
b.set_device_mesh(mesh)
b.outer_split(0, 2)
b.axis(0).parallelize(ParallelType.DIDx)
b.axis(1).parallelize(ParallelType.Stream)
""", "refused", "decompose-reshardings"),
    # A dynamic extent is read from the input wherever every rank holding the result holds
    # it (a mesh inside the input's), and only on ranks that hold the input.
    "set_to_a_smaller_mesh_sizes_its_dynamic_buffer_from_the_input": Regression(4, """
with FusionDefinition() as fd:
    a = fd.define_tensor([-1], dtype='float32')  # concrete: [8]
    b = fd.ops.relu(a)
    fd.add_output(b)
a.set_device_mesh(DeviceMesh([0, 1, 2, 3]))
b.set_device_mesh(DeviceMesh([1, 2]))
b.outer_split(0, 2)
b.axis(0).parallelize(ParallelType.DIDx)
""", "correct"),
    "dynamic_extent_is_read_only_where_the_input_is": Regression(4, """
with FusionDefinition() as fd:
    a = fd.define_tensor([-1], dtype='float32')  # concrete: [8]
    b = fd.ops.relu(a)
    fd.add_output(b)
a.set_device_mesh(DeviceMesh([0, 1]))
b.set_device_mesh(DeviceMesh([0, 1]))
b.outer_split(0, 2)
b.axis(0).parallelize(ParallelType.DIDx)
""", "correct"),
    # An all-to-all that scatters the axis it streams: reorder-sharded-axis built an
    # allocation order naming that axis twice (a crash) instead of refusing.
    "all_to_all_streaming_the_axis_it_scatters_is_refused": Regression(2, """
with FusionDefinition() as fd:
    t0 = fd.define_tensor([4, 4], dtype='float32')
    t5 = fd.ops.set(t0)
    fd.add_output(t5)
mesh = DeviceMesh([0, 1])
t0.set_device_mesh(mesh)
t0.outer_split(0, 2)
t0.axis(0).parallelize(ParallelType.DIDx)
t5.set_device_mesh(mesh)
t5.outer_split(1, 2)
t5.axis(1).parallelize(ParallelType.DIDx)
t5.axis(2).parallelize(ParallelType.Stream)
""", "refused"),
    # torch's fused attention kernels assume operands dense along their last axis (its
    # scaled_dot_product_attention makes them so): a key laid out transposed gave another
    # logsumexp than the unscheduled fusion (issue 28).
    "attention_of_a_key_laid_out_transposed": Regression(2, """
with FusionDefinition() as fd:
    t11 = fd.define_tensor([8, 4], dtype='float32')
    t18 = fd.ops.broadcast(t11, [True, False, False])
    t19 = fd.define_tensor([1, 8, 4], dtype='float32')
    t20 = fd.define_tensor([1, 8, 4], dtype='float32')
    t21, t22, t23, t24 = fd.ops.sdpfa_fwd(t18, t19, t20, is_causal=True)
    fd.add_output(t22)
mesh = DeviceMesh([0, 1])
t19.set_device_mesh(mesh)
t19.outer_split(2, 2)
t19.axis(2).parallelize(ParallelType.DIDx)
t19.set_allocation_order([0, 2, 1])
t22.set_allocation_order([1, 0])
""", "correct"),
}
