// Two host programs: hostir-run needs --program.
hir.program @a() {
  hir.return
}
hir.program @b() {
  hir.return
}
