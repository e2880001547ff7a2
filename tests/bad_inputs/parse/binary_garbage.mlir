// Binary garbage (not UTF-8): one located diagnostic, no UnicodeDecodeError traceback.
// SETUP: %t/garbage.mlir = b"\xff\xfe\x00\x89PNG\r\n\x1a\n" + bytes(range(256))
// RUN: hostir-opt %t/garbage.mlir
// EXPECT-FILE: %t/garbage.mlir
// EXPECT-ERROR@1:1: (?i)(utf-?8|not .*text|invalid (byte|character)|unexpected character)
