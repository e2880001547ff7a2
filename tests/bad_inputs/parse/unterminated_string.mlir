// An unterminated string literal in a symbol name: located where the string starts.
// RUN: hostir-opt %s
// EXPECT-ERROR@+1:14: (?i)(unterminated|end of) string|string literal|expected
hir.program @"main() {
  hir.return
}
