"""How `hir.post_on_stream` runs its kernel unit (a `fusion.func` of compute ops).

- "eager": the unit's generated Python function, one torch call per op. Always there, the
  reference for the other backend, and the default on CPUs (compiling costs seconds per
  unit, which tests and short runs never win back).
- "compiled": the unit's ops as fused kernels: the unit's function, written as plain torch
  calls on fresh values (no streams, logs or destinations inside), is compiled by
  `torch.compile` (Inductor: Triton kernels on GPUs, C++ on CPUs) once per input signature,
  and the post copies its results into its `outs`, which Inductor fuses into the kernels
  that compute them. A chain of elementwise ops (gelu written with mul/add/tanh, say)
  becomes one kernel instead of one pass over memory per op. Inductor caches what it
  compiles on disk, across processes, as torch does. The default on GPUs.

A unit torch.compile cannot trace falls back to the eager function, with a warning naming
the unit, so a program never fails because of the backend. Compiled functions are built
before a CUDA graph is captured (the evaluator runs once eagerly first), so capture
replays their kernels.
"""

from __future__ import annotations

import types
import warnings
from collections.abc import Callable

import torch

from .context import CompiledFunction, identifier

UNIT_BACKENDS = ("eager", "compiled")


def default_unit_backend(device: torch.device) -> str:
    return "compiled" if device.type == "cuda" else "eager"


def check_unit_backend(backend: str) -> str:
    if backend not in UNIT_BACKENDS:
        raise ValueError(f"unknown unit backend {backend!r}; use one of {', '.join(UNIT_BACKENDS)}")
    return backend


class CompiledUnit:
    """A unit's fused-kernel function, `run(*inputs, *outs)` as the eager unit is called:
    results written into `outs` (if the post has them) and returned."""

    def __init__(self, name: str, fresh: CompiledFunction, inputs: int, eager: Callable[[], CompiledFunction]):
        self.name = name
        self.inputs = inputs
        self._eager = eager
        self._compiled: Callable[..., tuple] | None = torch.compile(_into_outs(name, fresh.run, inputs),
                                                                    fullgraph=True, dynamic=False)

    def run(self, *args: torch.Tensor) -> tuple:
        if self._compiled is not None:
            try:
                return self._compiled(*args)
            except Exception as error:  # noqa: BLE001 -- any tracing or compiler failure: run eagerly
                if not _is_compile_failure(error):
                    raise
                warnings.warn(f"hostir: unit @{self.name} runs op by op: torch.compile failed: "
                              f"{type(error).__name__}: {str(error).splitlines()[0] if str(error) else ''}",
                              RuntimeWarning, stacklevel=2)
                self._compiled = None
        return self._eager().run(*args)


def _into_outs(name: str, fresh: Callable[..., tuple], inputs: int) -> Callable[..., tuple]:
    """`run(*inputs, *outs)` of the unit `name`, as a function with a code object of its own:
    Dynamo keys what it compiles by code object (and recompiles at most 8 times per code
    object), so units sharing one function would evict one another, and the ninth would run
    op by op."""

    def into_outs(*args: torch.Tensor) -> tuple:
        results = fresh(*args[:inputs])
        outs = args[inputs:]
        if not outs:
            return results
        for out, result in zip(outs, results):
            out.copy_(result)
        return tuple(outs)

    code = into_outs.__code__.replace(co_name=f"unit_{identifier(name)}")
    return types.FunctionType(code, into_outs.__globals__, code.co_name, None, into_outs.__closure__)


def _is_compile_failure(error: Exception) -> bool:
    """Raised by Dynamo, Inductor or Triton while compiling, not by a kernel while running
    (Inductor may compile a Triton kernel when it first runs: found on GPUs, a unit of
    random numbers whose 64-bit hash constants Triton cannot represent)."""
    module = type(error).__module__
    return (module.startswith(("torch._dynamo", "torch._inductor", "triton.compiler"))
            or "BackendCompilerFailed" in type(error).__name__)
