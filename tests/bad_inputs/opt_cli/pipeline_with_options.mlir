// An option on the hostir-lower pipeline that none of its passes takes (pipeline options go to the member passes that declare them).
// RUN: hostir-opt %inputs/neg.mlir -p 'hostir-lower{x=1}'
// EXPECT-ERROR: ^error: pipeline hostir-lower has no pass with option\(s\) x
