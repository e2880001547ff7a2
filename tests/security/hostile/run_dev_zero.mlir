// hostir-run reads its program with the same bound.
// RUN: hostir-run /dev/zero
// LIMITS: 10 s, 1 GB
// EXPECT-FILE: /dev/zero
// EXPECT-ERROR@1:1: input is larger than 64 MiB
