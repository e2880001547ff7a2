"""hostir's passes by CLI name, registered the way xDSL registers its own
(xdsl/transforms/__init__.py): `get_all_passes()` maps each name to a loader that imports
the pass's module only when called, so `hostir-opt` starts fast; `PIPELINES` names
sequences of passes. The package (`hostir.passes`) and the pipeline machinery
(`pipeline.py`) both read them from here.
"""

from __future__ import annotations

from collections.abc import Callable

from xdsl.passes import ModulePass


def get_all_passes() -> dict[str, Callable[[], type[ModulePass]]]:
    """Every hostir pass by CLI name; a pass is imported when its loader is called."""

    def get_allreduce_in_place():
        from hostir.passes import allreduce_in_place

        return allreduce_in_place.AllreduceInPlace

    def get_choose_pipelining():
        from hostir.passes import choose_pipelining

        return choose_pipelining.ChoosePipelining

    def get_convert_op_to_communication():
        from hostir.passes import convert_op_to_communication

        return convert_op_to_communication.ConvertOpToCommunication

    def get_decompose_reshardings():
        from hostir.passes import decompose_reshardings

        return decompose_reshardings.DecomposeReshardings

    def get_finalize_multidevice_domains():
        from hostir.passes import finalize_multidevice_domains

        return finalize_multidevice_domains.FinalizeMultideviceDomains

    def get_fuse_epilogues():
        from hostir.passes import fuse_epilogues

        return fuse_epilogues.FuseEpilogues

    def get_insert_deallocations():
        from hostir.passes import insert_deallocations

        return insert_deallocations.InsertDeallocations

    def get_lower_to_host():
        from hostir.passes import lower_to_host

        return lower_to_host.LowerToHost

    def get_order_chunk_compute():
        from hostir.passes import order_chunk_compute

        return order_chunk_compute.OrderChunkCompute

    def get_propagate_shardings():
        from hostir.passes import propagate_shardings

        return propagate_shardings.PropagateShardings

    def get_reorder_sharded_axis():
        from hostir.passes import reorder_sharded_axis

        return reorder_sharded_axis.ReorderShardedAxisPass

    def get_specialize_extents():
        from hostir.passes import specialize_extents

        return specialize_extents.SpecializeExtents

    def get_stream_parallel_type():
        from hostir.passes import stream_parallel_type

        return stream_parallel_type.StreamParallelType

    def get_schedule_communication():
        from hostir.passes import schedule_communication

        return schedule_communication.ScheduleCommunication

    def get_split_by_member():
        from hostir.passes import split_by_member

        return split_by_member.SplitByMember

    def get_verify_collective_order():
        from hostir.passes import verify_collective_order

        return verify_collective_order.VerifyCollectiveOrder

    return {
        "allreduce-in-place": get_allreduce_in_place,
        "choose-pipelining": get_choose_pipelining,
        "convert-op-to-communication": get_convert_op_to_communication,
        "decompose-reshardings": get_decompose_reshardings,
        "finalize-multidevice-domains": get_finalize_multidevice_domains,
        "fuse-epilogues": get_fuse_epilogues,
        "insert-deallocations": get_insert_deallocations,
        "lower-to-host": get_lower_to_host,
        "order-chunk-compute": get_order_chunk_compute,
        "propagate-shardings": get_propagate_shardings,
        "reorder-sharded-axis": get_reorder_sharded_axis,
        "schedule-communication": get_schedule_communication,
        "specialize-extents": get_specialize_extents,
        "split-by-member": get_split_by_member,
        "stream-parallel-type": get_stream_parallel_type,
        "verify-collective-order": get_verify_collective_order,
    }


PIPELINES: dict[str, tuple[str, ...]] = {
    # nvFuser's order: the preseg passes (csrc/preseg_passes/pre_segmenter.cpp), the host
    # lowering (csrc/host_ir/lower.cpp), then the host IR passes (csrc/host_ir/passes.cpp);
    # last, a check nvFuser does not make: no rank waits forever for another's collective.
    "hostir-lower": (
        "propagate-shardings",
        "decompose-reshardings",
        "choose-pipelining",
        "reorder-sharded-axis",
        "finalize-multidevice-domains",
        "fuse-epilogues",
        "lower-to-host",
        "stream-parallel-type",
        "convert-op-to-communication",
        "split-by-member",
        "allreduce-in-place",
        "schedule-communication",
        "insert-deallocations",
        "order-chunk-compute",
        "verify-collective-order",
    ),
}
"""Named pass sequences. They are expanded into their member passes before xDSL parses
a pipeline, so disabling a pass or printing the IR after one reaches the members."""

PIPELINE_DEFAULTS: dict[str, str] = {
    "hostir-lower": "transport=auto cuda-graph=true",
}
"""Options a pipeline gives its member passes unless the pipeline spec sets them: by
default `hostir-lower` lets the cost model of the machine choose each collective's
transport and whether a stream pipeline pays (docs/copy_engine.md, "Choosing"), for a
program replayed from a CUDA graph, as the runtime runs programs on GPUs by default.
`hostir-lower{transport=nccl}` keeps every collective on NCCL and every pipeline as
written; `cuda-graph=false` prices the host's work per chunk of an eager run."""
