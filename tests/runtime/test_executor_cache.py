"""Programs compiled (and fusions lowered) once, then run many times
(runtime/executor_cache.py, nvFuser's FusionExecutorCache): by program text and
options, at most `capacity` of them."""

from __future__ import annotations

import pytest
import torch

from hostir import passes
from hostir.runtime import execute, executor_cache, launcher
from hostir.runtime.evaluator import checked_device
from hostir.runtime.executor_cache import LruCache, device_of_inputs
from hostir_dialect.context import parse_module

T = "!fusion.tensor<f32[2, 4]>"
DOUBLE = f"""hir.program @main(%x: {T}) -> {T} {{
  %y = fusion.add %x, %x : {T}, {T} -> {T}
  hir.return %y : {T}
}}"""
FUSION = f"""fusion.func @f(%x: {T}) -> {T} {{
  %y = fusion.relu %x : {T} -> {T}
  fusion.return %y : {T}
}}"""


def test_execute_compiles_once_per_program_text_and_options(count_calls, monkeypatch):
    monkeypatch.setattr(executor_cache, "_EXECUTORS", executor_cache.ExecutorCache())
    compilations = count_calls(executor_cache, "Evaluator")
    x = torch.randn(2, 4)
    for module in (parse_module(DOUBLE), parse_module(DOUBLE)):  # same text, another module
        (y,) = execute(module, [x])
        torch.testing.assert_close(y, 2 * x)
    assert len(compilations) == 1
    execute(parse_module(DOUBLE), [x], number_of_streams=2)
    execute(parse_module(DOUBLE), [x], number_of_streams=2, device="cpu")  # the inputs' device: the same
    assert len(compilations) == 2
    execute(parse_module(DOUBLE), [x], number_of_streams=2, cuda_graph=False)
    assert len(compilations) == 3  # other options
    (y,) = execute(parse_module(DOUBLE.replace("fusion.add", "fusion.mul")), [x])
    torch.testing.assert_close(y, x * x)
    assert len(compilations) == 4


def test_lower_module_lowers_a_fusion_text_once(count_calls, monkeypatch):
    monkeypatch.setattr(launcher, "_LOWERED", LruCache(capacity=2))
    lowerings = count_calls(passes, "lower")
    first, second = launcher.lower_module(parse_module(FUSION)), launcher.lower_module(parse_module(FUSION))
    assert len(lowerings) == 1
    assert first is not second and str(first) == str(second)  # copies: a caller may change its own
    assert "hir.program @f" in str(first)


def test_a_cache_keeps_its_most_recently_used_values():
    cache: LruCache[str] = LruCache(capacity=2)
    for key in ("a", "b", "a", "c"):  # "b" is the least recently used when "c" comes
        cache.get(key, lambda key=key: key.upper())
    assert cache.values() == ["A", "C"] and cache.misses == 3
    assert cache.get("b", lambda: "B again") == "B again"


def test_a_single_process_run_goes_where_its_tensor_inputs_are(monkeypatch):
    """Outside a torch.distributed world the device is that of the tensor inputs (CUDA
    tensors: their GPU, as nvFuser's execute does); mixed devices choose nothing, so
    the evaluator refuses the odd ones out; a device given, or a world's, wins."""
    cpu = torch.device("cpu")
    assert device_of_inputs([torch.zeros(2), None, 3, torch.ones(1)], None) == cpu
    assert device_of_inputs([torch.zeros(2), torch.zeros(2, device="meta")], None) is None
    assert device_of_inputs([2], None) is None
    assert device_of_inputs([torch.zeros(2, device="meta")], "cpu") == "cpu"
    monkeypatch.setattr(executor_cache, "current_world", lambda: object())
    assert device_of_inputs([torch.zeros(2, device="meta")], None) is None


def test_a_device_is_named_as_torch_or_nvfuser_name_it():
    """A torch device, its name, or nvFuser's CUDA index; a bad name is refused."""
    assert checked_device("cpu") == checked_device(torch.device("cpu")) == torch.device("cpu")
    with pytest.raises(ValueError, match="invalid device 'gpu0'"):
        checked_device("gpu0")
    if not torch.cuda.is_available():
        with pytest.raises(ValueError, match=r"device 'cuda:1' requested but CUDA is not available"):
            checked_device(1)
    else:
        assert checked_device(0) == torch.device("cuda", 0)
