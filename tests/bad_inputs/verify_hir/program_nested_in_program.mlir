// A hir.program inside another one.
// RUN: hostir-opt %s
hir.program @p() {
  // EXPECT-ERROR@+1:3: (?i)(module|top level|parent|nested)
  hir.program @q() {
    hir.return
  }
  hir.return
}
