# ruff: noqa: F821  (lit injects `config` and `lit_config`)
# Run:  lit -v lit_tests
import os
import shutil

import lit.formats

config.name = "hostir"
config.test_format = lit.formats.ShTest(execute_external=False)
config.suffixes = [".mlir"]
config.excludes = ["lit.cfg.py", "Inputs"]
config.test_source_root = os.path.dirname(__file__)
config.test_exec_root = os.path.join(os.path.dirname(__file__), "Output")

# lit keeps PATH but drops the rest; pass through what an un-installed checkout needs.
config.environment["PATH"] = os.environ["PATH"]
for var in ("PYTHONPATH", "VIRTUAL_ENV", "HOME"):
    if var in os.environ:
        config.environment[var] = os.environ[var]

# Verify after every pass (hostir-opt --verify-each), as the pytest suite does, and check
# every cached answer against the answer worked out again (hostir_dialect/cache_check.py).
config.environment["HOSTIR_VERIFY_EACH"] = "1"
config.environment["HOSTIR_CHECK_CACHES"] = "1"

for tool in ("hostir-opt", "filecheck"):
    if shutil.which(tool, path=os.environ["PATH"]) is None:
        lit_config.fatal(f"'{tool}' not found on PATH: install the project with its test extras (see README)")

examples = os.path.join(os.path.dirname(config.test_source_root), "examples")
config.substitutions.append(("%examples", examples))
# custom -> generic -> custom must print what custom -> custom prints
config.substitutions.append(
    ("HOSTIR_ROUNDTRIP", "hostir-opt %s --split-input-file | hostir-opt --split-input-file | filecheck %s")
)
config.substitutions.append(
    ("HOSTIR_GENERIC_ROUNDTRIP",
     "hostir-opt %s --split-input-file --print-op-generic | hostir-opt --split-input-file | filecheck %s")
)
config.substitutions.append(
    ("HOSTIR_DIAGNOSTICS", "hostir-opt %s --split-input-file --verify-diagnostics | filecheck %s")
)
