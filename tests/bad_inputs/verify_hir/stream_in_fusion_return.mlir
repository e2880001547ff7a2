// hir.return of a stream value (not a tensor).
// RUN: hostir-opt %s
hir.program @p() {
  %s = hir.get_current_stream
  // EXPECT-ERROR@+1:3: (?i)(tensor|stream|type)
  hir.return %s : !hir.stream
}
