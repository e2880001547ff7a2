// RUN: hostir-opt --help | filecheck %s
// RUN: hostir-opt --help | filecheck %s --check-prefix=PASSES

// --help lists every pass hostir-opt knows with the first line of its docstring and its
// options (name=default (type), dashed as in pipelines), then the pipelines with their passes, as mlir-opt
// --help does.
// CHECK:      passes and pipelines (-p NAME{option=value ...},...):
// CHECK-NEXT:   allreduce-in-place            NCCL all-reduces reduce in the buffer their partial sums are computed into
// CHECK-NEXT:   canonicalize                  {{.+}}
// CHECK-NEXT:   choose-pipelining             Drop a function's stream pipeline where the cost model says running it whole is faster
// CHECK-NEXT:                                 options: transport=nccl (str), machine=detect (str), cuda-graph=false (bool)
// CHECK-NEXT:   convert-op-to-communication   Turn each communicating set or reduce of a host program into collectives and waits
// CHECK-NEXT:                                 options: transport=nccl (str), machine=detect (str)
// CHECK-NEXT:   cse                           Eliminate common sub-expressions (xDSL)
// CHECK-NEXT:   dce                           Eliminate dead code: unused ops without side effects (xDSL)
// CHECK-NEXT:   decompose-reshardings         Make every op that moves data between devices exactly one communication
// CHECK-NEXT:                                 options: insert-after=false (bool)
// CHECK-NEXT:   finalize-multidevice-domains  Decide how each tensor of a user fusion is allocated: whole, or one stream chunk at a time
// CHECK-NEXT:   fuse-epilogues                Fold the gelu (tanh) or relu that follows a matmul or linear into its epilogue
// CHECK-NEXT:   insert-deallocations          Free every buffer a host program owns after its last use
// CHECK-NEXT:   lower-to-host                 Turn each user fusion into a hir.program of standalone host ops and kernel units
// CHECK-NEXT:   order-chunk-compute           Run in chunk order the compute of stream loops that only send, through a copy-engine all-reduce
// CHECK-NEXT:                                 options: skew=true (bool)
// CHECK-NEXT:   propagate-shardings           Give every tensor of a user fusion a mesh and the sharding of the tensors the user annotated
// CHECK-NEXT:   reorder-sharded-axis          Lay out the buffers of each communication as its collective needs them (local copies around it)
// CHECK-NEXT:   schedule-communication        Post every collective as early and wait for it as late as its data allow
// CHECK-NEXT:   specialize-extents            Give the fusion's dynamic extents the values of one run, so later passes decide for them
// CHECK-NEXT:                                 options: extents=() (tuple[int, ...])
// CHECK-NEXT:   split-by-member               Split the compute around copy-engine collectives by team member (own part first)
// CHECK-NEXT:                                 options: reduce-in-producer=true (bool)
// CHECK-NEXT:   stream-parallel-type          Pipeline stream-parallel host ops and kernel units in loops over stream chunks on rotating streams
// CHECK-NEXT:                                 options: bounded-intermediates=false (bool)
// CHECK-NEXT:   verify-collective-order       Refuse host programs whose ranks would wait forever for each other's collectives or transfers
// CHECK-NEXT:                                 options: world-size=none (int | None)
// CHECK-NEXT:   hostir-lower                  pipeline: propagate-shardings, decompose-reshardings, choose-pipelining, reorder-sharded-axis, finalize-multidevice-domains, fuse-epilogues, lower-to-host, stream-parallel-type, convert-op-to-communication, split-by-member, allreduce-in-place, schedule-communication, insert-deallocations, order-chunk-compute, verify-collective-order
// CHECK-NEXT:                                 defaults: transport=auto cuda-graph=true

// Options are spelled with dashes, as in pipelines; -p names the pipelines too.
// PASSES:      -p PASSES, --passes PASSES
// PASSES:      order,canonicalize,cse,dce,hostir-lower
