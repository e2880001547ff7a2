// nvFuser: MultiDeviceStreamParallelTypeTest.Allgather (tests/cpp/test_multidevice_stream_parallel_type.cpp), for D = 2 devices.
// tv0 [i0, DIDx(D)] on mesh [0, 1] (global 4xD: each rank holds a 4x1 column);
// tv1 = set(tv0) [Stream(i0), D], replicated on the mesh. The sharded axis is a logical axis of
// extent D, parallelized directly (nvFuser's tv0->axis(1)->parallelize(DIDx)).
//
// Lowering should produce: allocate tv1, get_current_stream, sync loop, main loop {set worker
// stream; alias_select tv0[i] -> [D(didx)], alias_select tv1[i] -> [D]; hir.allocate (no-op,
// already bound); hir.allgather team [0, 1]; hir.wait}. Output == the unsharded input.

builtin.module {
  fusion.func @allgather(%tv0: !fusion.tensor<f32[4, 2 didx], mesh=[0, 1]>) -> !fusion.tensor<f32[4 stream, 2], mesh=[0, 1]> {
    %tv1 = fusion.set %tv0 : !fusion.tensor<f32[4, 2 didx], mesh=[0, 1]> -> !fusion.tensor<f32[4 stream, 2], mesh=[0, 1]>
    fusion.return %tv1 : !fusion.tensor<f32[4 stream, 2], mesh=[0, 1]>
  }
}
