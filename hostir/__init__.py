"""hostir's Python API for nvFuser users: define a fusion, lower it, run it.

    from hostir import FusionDefinition, DeviceMesh, ParallelType

`hostir.FusionDefinition` (hostir/definition.py) is the IR frontend's
`hostir_dialect.FusionDefinition` plus `lower()` (the `hostir-lower` pipeline of
`hostir.passes`) and `execute()` (lower, then run on this rank with `hostir.runtime`).

The package also holds the compiler's and the runtime's layers, installed from the
top-level folders `passes/` and `runtime/` as `hostir.passes` and `hostir.runtime`
(pyproject.toml), so that hostir claims no generic import name. Its own names are
imported when first asked for (PEP 562): `hostir-opt` imports `hostir.passes`, which
must not import the runtime and torch with this package.
"""

from __future__ import annotations

import importlib

_FROM_DIALECT = ("DataType", "DeviceMesh", "FusionDefinitionError", "IterDomain", "ParallelType", "Scalar", "Tensor")
_FROM_FRONTEND = ("Extent", "MemoryType")
_NVFUSER_NAMES = {
    "FusionDefinition": ("hostir.definition", "FusionDefinition"),
    "execute_with_dtensors": ("hostir.dtensor", "execute_with_dtensors"),
    "CommunicatorBackend": ("hostir.multidevice", "CommunicatorBackend"),
    "TensorView": ("hostir_dialect.frontend", "Tensor"),
    "PythonProfiler": ("hostir.profiler", "PythonProfiler"),
}
"""Names in nvFuser's spelling (`nvfuser_direct.TensorView` is hostir's Tensor); with
`multidevice` and `pytorch_utils`, `import hostir as nvfuser` reads nvFuser's Python tests."""
_SUBMODULES = ("multidevice", "pytorch_utils", "dtensor")

__all__ = ["FusionDefinition", *_FROM_DIALECT, *_FROM_FRONTEND, *_NVFUSER_NAMES, *_SUBMODULES]


def __getattr__(name: str) -> object:
    if name in _NVFUSER_NAMES:
        module, attribute = _NVFUSER_NAMES[name]
        return getattr(importlib.import_module(module), attribute)
    if name in _FROM_DIALECT:
        return getattr(importlib.import_module("hostir_dialect"), name)
    if name in _FROM_FRONTEND:
        return getattr(importlib.import_module("hostir_dialect.frontend"), name)
    if name in _SUBMODULES:
        return importlib.import_module(f"hostir.{name}")
    raise AttributeError(f"module 'hostir' has no attribute {name!r}")
