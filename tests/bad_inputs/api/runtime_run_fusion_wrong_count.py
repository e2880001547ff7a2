# run_fusion with no inputs for a one-argument fusion.
# EXPECT-RAISES: InputError: takes 1 inputs, got 0
import torch
from hostir import runtime
from hostir_dialect import parse_module
F = '''fusion.func @f(%x: !fusion.tensor<f32[4]>) -> !fusion.tensor<f32[4]> {
  fusion.return %x : !fusion.tensor<f32[4]>
}'''
runtime.run_fusion(parse_module(F), [])
