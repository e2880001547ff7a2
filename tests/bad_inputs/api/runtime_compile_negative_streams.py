# compile_program(number_of_streams=-1).
# EXPECT-RAISES: ValueError: number_of_streams must be at least 1
import torch
from hostir import runtime
from hostir_dialect import parse_module
P = '''hir.program @main(%x: !fusion.tensor<f32[4]>) -> !fusion.tensor<f32[4]> {
  hir.return %x : !fusion.tensor<f32[4]>
}'''
runtime.compile_program(parse_module(P), number_of_streams=-1)
