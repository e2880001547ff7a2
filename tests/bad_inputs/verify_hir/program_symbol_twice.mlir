// Two programs with one name.
// RUN: hostir-opt %s
hir.program @p() {
  hir.return
}
// EXPECT-ERROR@+1:1: (?i)redefinition of symbol|already defined|@p
hir.program @p() {
  hir.return
}
