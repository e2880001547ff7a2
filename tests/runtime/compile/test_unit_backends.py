"""How kernel units run (runtime/compile/unit_backends.py): eagerly, or compiled into fused
kernels by torch.compile, which falls back to the eager function where it cannot compile.
(The compiled backend's numbers are checked against eager torch by the differential tests:
tests/differential/test_differential.py, compiled units on CPU ranks.)"""

from __future__ import annotations

import pytest
import torch

from hostir import FusionDefinition, ParallelType
from hostir.runtime import Evaluator
from hostir.runtime.compile import unit_backends


def gelu_block():
    """x @ w, then tanh-gelu written out with mul/add/tanh: a matmul and a five-op unit,
    pipelined over 4 stream chunks."""
    with FusionDefinition() as fd:
        x = fd.define_tensor([4, 8, 16], dtype="float32")
        w = fd.define_tensor([16, 32], dtype="float32")
        g = fd.ops.matmul(x, w)
        inner = fd.ops.mul(fd.ops.add(g, fd.ops.mul(fd.ops.mul(fd.ops.mul(g, g), g), 0.044715)), 0.7978845608)
        y = fd.ops.mul(fd.ops.mul(g, 0.5), fd.ops.add(fd.ops.tanh(inner), 1.0))
        fd.add_output(y)
    g.axis(0).parallelize(ParallelType.Stream)
    y.axis(0).parallelize(ParallelType.Stream)
    return fd.lower()


def test_the_default_backend_is_compiled_on_gpus_and_eager_on_cpus():
    assert unit_backends.default_unit_backend(torch.device("cuda", 0)) == "compiled"
    assert unit_backends.default_unit_backend(torch.device("cpu")) == "eager"
    assert Evaluator(gelu_block()).unit_backend == "eager"
    with pytest.raises(ValueError, match="unknown unit backend 'fused'; use one of eager, compiled"):
        Evaluator(gelu_block(), unit_backend="fused")


class _TracingFailed(Exception):
    """Stands for an error of torch.compile's tracer (its module is Dynamo's)."""


_TracingFailed.__module__ = "torch._dynamo.exc"


class _TritonFailed(Exception):
    """Stands for Triton's compiler refusing a kernel Inductor generated."""


_TritonFailed.__module__ = "triton.compiler.errors"


@pytest.mark.parametrize("error", [_TracingFailed("cannot trace this"), _TritonFailed("Nonrepresentable integer")])
def test_compiler_failures_are_told_from_kernel_failures(error):
    assert unit_backends._is_compile_failure(error)
    assert not unit_backends._is_compile_failure(RuntimeError("CUDA error: an illegal memory access"))


def test_a_unit_torch_compile_cannot_trace_runs_op_by_op_with_a_warning(monkeypatch):
    def failing_compile(function, **options):
        def compiled(*args):
            raise _TracingFailed("cannot trace this")
        return compiled

    monkeypatch.setattr(unit_backends.torch, "compile", failing_compile)
    evaluator = Evaluator(gelu_block(), unit_backend="compiled")
    x, w = torch.randn(4, 8, 16), torch.randn(16, 32)
    with pytest.warns(RuntimeWarning, match=r"unit @fusion_unit0 runs op by op: torch.compile failed: _TracingFailed"):
        (first,) = evaluator.run([x, w])
    (second,) = evaluator.run([x, w])  # no second attempt, no second warning
    expected = torch.nn.functional.gelu(x @ w, approximate="tanh")
    torch.testing.assert_close(first, expected)
    torch.testing.assert_close(second, expected)


def test_an_error_of_the_unit_itself_is_not_hidden_by_the_fallback(monkeypatch):
    def broken_compile(function, **options):
        def compiled(*args):
            raise RuntimeError("a kernel failed")
        return compiled

    monkeypatch.setattr(unit_backends.torch, "compile", broken_compile)
    with pytest.raises(Exception, match="a kernel failed"):
        Evaluator(gelu_block(), unit_backend="compiled").run([torch.randn(4, 8, 16), torch.randn(16, 32)])


def test_each_unit_is_compiled_from_a_code_object_of_its_own(monkeypatch):
    # Dynamo keys compiled code by code object and recompiles one at most 8 times: units
    # sharing one function evicted one another, and from the ninth on ran op by op (found
    # on GPUs: a program with many units, several programs in one process).
    compiled = []

    def recording_compile(function, **options):
        compiled.append(function)
        return function

    monkeypatch.setattr(unit_backends.torch, "compile", recording_compile)
    x, w = torch.randn(4, 8, 16), torch.randn(16, 32)
    results = [Evaluator(gelu_block(), unit_backend="compiled").run([x, w])[0] for _ in range(2)]
    assert len(compiled) == 2 and compiled[0].__code__ is not compiled[1].__code__
    assert compiled[0].__code__.co_name == "unit_fusion__unit0"
    for result in results:
        torch.testing.assert_close(result, torch.nn.functional.gelu(x @ w, approximate="tanh"))
