// --backend nccl on a machine without enough GPUs: a clear refusal, no ZeroDivisionError.
// RUN: hostir-run %inputs/host_2ranks.mlir --nproc 2 --backend nccl
// EXPECT-ERROR: ^hostir-run: error: (?!.*rank \d+ failed).*(GPU|CUDA)
