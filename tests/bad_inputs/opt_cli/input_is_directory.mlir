// A directory as the input.
// RUN: hostir-opt %t
// EXPECT-ERROR: ^error: (Is a directory|.*directory)
