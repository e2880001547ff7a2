// The same on standard input.
// RUN: hostir-opt - < /dev/zero
// LIMITS: 10 s, 1 GB
// EXPECT-FILE: <stdin>
// EXPECT-ERROR@1:1: input is larger than 64 MiB
