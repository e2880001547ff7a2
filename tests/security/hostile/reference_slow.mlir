// The eager reference ran outside --timeout (a 16384**2 matmul ran past --timeout 5).
// The program returns its input at once; its reference multiplies 1024 x 1024 f64 matrices
// 100 times (8 MB a value, so that the 1 GB address-space limit bounds hostir and not torch's
// own import): stopped at --timeout 2, inside the launch.
// RUN: hostir-run %s --timeout 2
// LIMITS: 10 s, 1 GB
// EXPECT-ERROR: ^hostir-run: error: the 1 rank\(s\) did not finish within 2 s and were stopped$
!t = !fusion.tensor<f64[1024, 1024]>
!r = !fusion.tensor<f64[1024, 1024, r1024]>
hir.program @main(%p0: !t, %b: !t) -> !t {
  hir.return %p0 : !t
}
fusion.func @reference(%p0: !t, %b: !t) -> !t {
  %p1 = fusion.matmul %p0, %b : !t, !t -> !r
  %p2 = fusion.matmul %p1, %b : !r, !t -> !r
  %p3 = fusion.matmul %p2, %b : !r, !t -> !r
  %p4 = fusion.matmul %p3, %b : !r, !t -> !r
  %p5 = fusion.matmul %p4, %b : !r, !t -> !r
  %p6 = fusion.matmul %p5, %b : !r, !t -> !r
  %p7 = fusion.matmul %p6, %b : !r, !t -> !r
  %p8 = fusion.matmul %p7, %b : !r, !t -> !r
  %p9 = fusion.matmul %p8, %b : !r, !t -> !r
  %p10 = fusion.matmul %p9, %b : !r, !t -> !r
  %p11 = fusion.matmul %p10, %b : !r, !t -> !r
  %p12 = fusion.matmul %p11, %b : !r, !t -> !r
  %p13 = fusion.matmul %p12, %b : !r, !t -> !r
  %p14 = fusion.matmul %p13, %b : !r, !t -> !r
  %p15 = fusion.matmul %p14, %b : !r, !t -> !r
  %p16 = fusion.matmul %p15, %b : !r, !t -> !r
  %p17 = fusion.matmul %p16, %b : !r, !t -> !r
  %p18 = fusion.matmul %p17, %b : !r, !t -> !r
  %p19 = fusion.matmul %p18, %b : !r, !t -> !r
  %p20 = fusion.matmul %p19, %b : !r, !t -> !r
  %p21 = fusion.matmul %p20, %b : !r, !t -> !r
  %p22 = fusion.matmul %p21, %b : !r, !t -> !r
  %p23 = fusion.matmul %p22, %b : !r, !t -> !r
  %p24 = fusion.matmul %p23, %b : !r, !t -> !r
  %p25 = fusion.matmul %p24, %b : !r, !t -> !r
  %p26 = fusion.matmul %p25, %b : !r, !t -> !r
  %p27 = fusion.matmul %p26, %b : !r, !t -> !r
  %p28 = fusion.matmul %p27, %b : !r, !t -> !r
  %p29 = fusion.matmul %p28, %b : !r, !t -> !r
  %p30 = fusion.matmul %p29, %b : !r, !t -> !r
  %p31 = fusion.matmul %p30, %b : !r, !t -> !r
  %p32 = fusion.matmul %p31, %b : !r, !t -> !r
  %p33 = fusion.matmul %p32, %b : !r, !t -> !r
  %p34 = fusion.matmul %p33, %b : !r, !t -> !r
  %p35 = fusion.matmul %p34, %b : !r, !t -> !r
  %p36 = fusion.matmul %p35, %b : !r, !t -> !r
  %p37 = fusion.matmul %p36, %b : !r, !t -> !r
  %p38 = fusion.matmul %p37, %b : !r, !t -> !r
  %p39 = fusion.matmul %p38, %b : !r, !t -> !r
  %p40 = fusion.matmul %p39, %b : !r, !t -> !r
  %p41 = fusion.matmul %p40, %b : !r, !t -> !r
  %p42 = fusion.matmul %p41, %b : !r, !t -> !r
  %p43 = fusion.matmul %p42, %b : !r, !t -> !r
  %p44 = fusion.matmul %p43, %b : !r, !t -> !r
  %p45 = fusion.matmul %p44, %b : !r, !t -> !r
  %p46 = fusion.matmul %p45, %b : !r, !t -> !r
  %p47 = fusion.matmul %p46, %b : !r, !t -> !r
  %p48 = fusion.matmul %p47, %b : !r, !t -> !r
  %p49 = fusion.matmul %p48, %b : !r, !t -> !r
  %p50 = fusion.matmul %p49, %b : !r, !t -> !r
  %p51 = fusion.matmul %p50, %b : !r, !t -> !r
  %p52 = fusion.matmul %p51, %b : !r, !t -> !r
  %p53 = fusion.matmul %p52, %b : !r, !t -> !r
  %p54 = fusion.matmul %p53, %b : !r, !t -> !r
  %p55 = fusion.matmul %p54, %b : !r, !t -> !r
  %p56 = fusion.matmul %p55, %b : !r, !t -> !r
  %p57 = fusion.matmul %p56, %b : !r, !t -> !r
  %p58 = fusion.matmul %p57, %b : !r, !t -> !r
  %p59 = fusion.matmul %p58, %b : !r, !t -> !r
  %p60 = fusion.matmul %p59, %b : !r, !t -> !r
  %p61 = fusion.matmul %p60, %b : !r, !t -> !r
  %p62 = fusion.matmul %p61, %b : !r, !t -> !r
  %p63 = fusion.matmul %p62, %b : !r, !t -> !r
  %p64 = fusion.matmul %p63, %b : !r, !t -> !r
  %p65 = fusion.matmul %p64, %b : !r, !t -> !r
  %p66 = fusion.matmul %p65, %b : !r, !t -> !r
  %p67 = fusion.matmul %p66, %b : !r, !t -> !r
  %p68 = fusion.matmul %p67, %b : !r, !t -> !r
  %p69 = fusion.matmul %p68, %b : !r, !t -> !r
  %p70 = fusion.matmul %p69, %b : !r, !t -> !r
  %p71 = fusion.matmul %p70, %b : !r, !t -> !r
  %p72 = fusion.matmul %p71, %b : !r, !t -> !r
  %p73 = fusion.matmul %p72, %b : !r, !t -> !r
  %p74 = fusion.matmul %p73, %b : !r, !t -> !r
  %p75 = fusion.matmul %p74, %b : !r, !t -> !r
  %p76 = fusion.matmul %p75, %b : !r, !t -> !r
  %p77 = fusion.matmul %p76, %b : !r, !t -> !r
  %p78 = fusion.matmul %p77, %b : !r, !t -> !r
  %p79 = fusion.matmul %p78, %b : !r, !t -> !r
  %p80 = fusion.matmul %p79, %b : !r, !t -> !r
  %p81 = fusion.matmul %p80, %b : !r, !t -> !r
  %p82 = fusion.matmul %p81, %b : !r, !t -> !r
  %p83 = fusion.matmul %p82, %b : !r, !t -> !r
  %p84 = fusion.matmul %p83, %b : !r, !t -> !r
  %p85 = fusion.matmul %p84, %b : !r, !t -> !r
  %p86 = fusion.matmul %p85, %b : !r, !t -> !r
  %p87 = fusion.matmul %p86, %b : !r, !t -> !r
  %p88 = fusion.matmul %p87, %b : !r, !t -> !r
  %p89 = fusion.matmul %p88, %b : !r, !t -> !r
  %p90 = fusion.matmul %p89, %b : !r, !t -> !r
  %p91 = fusion.matmul %p90, %b : !r, !t -> !r
  %p92 = fusion.matmul %p91, %b : !r, !t -> !r
  %p93 = fusion.matmul %p92, %b : !r, !t -> !r
  %p94 = fusion.matmul %p93, %b : !r, !t -> !r
  %p95 = fusion.matmul %p94, %b : !r, !t -> !r
  %p96 = fusion.matmul %p95, %b : !r, !t -> !r
  %p97 = fusion.matmul %p96, %b : !r, !t -> !r
  %p98 = fusion.matmul %p97, %b : !r, !t -> !r
  %p99 = fusion.matmul %p98, %b : !r, !t -> !r
  %p100 = fusion.matmul %p99, %b : !r, !t -> !r
  %out = fusion.set %p100 : !r -> !t
  fusion.return %out : !t
}
