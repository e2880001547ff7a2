// --help lists the passes with their options.
// RUN: hostir-opt --help
// EXPECT-STDOUT: insert_after|insert-after
// EXPECT-STDOUT: bounded_intermediates|bounded-intermediates
