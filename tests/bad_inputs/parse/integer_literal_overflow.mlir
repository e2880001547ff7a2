// An index constant beyond 64 bits.
// RUN: hostir-opt %s
// EXPECT-ERROR@+1:21: (?i)(overflow|too large|does not fit|out of range|bit)
%c = arith.constant 99999999999999999999999 : index
