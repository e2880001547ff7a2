// A use of a type alias that was never defined.
// RUN: hostir-opt %s
// EXPECT-ERROR@+1:21: (?i)undefined|unknown|!nothing|not (defined|registered)
%a = hir.allocate : !nothing
