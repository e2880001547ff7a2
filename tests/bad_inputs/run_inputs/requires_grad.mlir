// A tensor with requires_grad: a tensor all the same; it runs (no pickling traceback).
// RUN: hostir-run %inputs/host_2ranks.mlir --nproc 2 --inputs %t/x.pt
// SETUP: %t/x.pt = torch.zeros(2, 8, requires_grad=True)
// EXPECT-STDOUT: max error vs reference 0\b
