// --help lists the passes and pipelines (among -p's choices too) with their options,
// spelled with dashes as the pipeline syntax and the README spell them.
// RUN: hostir-opt --help
// EXPECT-STDOUT: insert-after=false
// EXPECT-STDOUT: bounded-intermediates=false
// EXPECT-STDOUT: world-size=none
// EXPECT-STDOUT: cuda-graph=false
// EXPECT-STDOUT: (?s)-p PASSES, --passes PASSES.*hostir-lower.*passes and pipelines
// EXPECT-NOT-STDOUT: world_size|cuda_graph|insert_after|bounded_intermediates
