"""The test suite verifies the IR after every pass (mlir-opt's --verify-each; the tools
verify only after the pipeline by default), so that a pass that breaks the IR fails at
that pass. Ranks and CLIs started by the tests inherit the setting."""

import os

from passes.pipeline import VERIFY_EACH_VARIABLE

os.environ.setdefault(VERIFY_EACH_VARIABLE, "1")
