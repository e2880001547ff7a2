// A directory as FILE.
// RUN: hostir-run %t
// EXPECT-ERROR: ^hostir-run: error: cannot read .*: Is a directory
