// A file of comments only is an empty module: valid.
// RUN: hostir-opt %s
// EXPECT-STDOUT: ^builtin.module \{\n\}
