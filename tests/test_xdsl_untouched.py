"""Importing and using hostir leaves xDSL as upstream ships it (issue 29).

A fresh interpreter imports the xDSL modules hostir uses, parses, verifies and prints a
module of xDSL's own dialects with xDSL's own parser and printer (so whatever xDSL fills
in lazily is filled), and records every class of those modules (its attributes, by
identity), the definitions of the arith, scf and builtin ops, the module-level functions
and the collector's settings. Then it imports hostir's four packages and uses them:
`hostir-opt` as a command (`console_main`) and with `--disable-verify`, the Python API,
lowering and running a fusion. Nothing recorded may have changed.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

LOADED_BY_HOSTIR = """
import sys
import hostir, hostir_dialect, hostir.passes, hostir.passes.opt, hostir.runtime, hostir.runtime.cli
print("\\n".join(sorted(name for name in sys.modules if name == "xdsl" or name.startswith("xdsl."))))
"""

CHECK = """
import contextlib, gc, importlib, io, json, sys, types
MODULES = sys.argv[1].split()
for name in MODULES:
    importlib.import_module(name)
from xdsl.context import Context
from xdsl.dialects.arith import Arith
from xdsl.dialects.builtin import Builtin
from xdsl.dialects.scf import Scf
from xdsl.parser import Parser
from xdsl.printer import Printer

XDSL_ONLY = '''
%c0 = arith.constant 0 : index
%c4 = arith.constant 4 : index
%c1 = arith.constant 1 : index
%x = arith.constant 7 : i32
scf.for %i = %c0 to %c4 step %c1 {
  %y = arith.addi %x, %x : i32
  %k = arith.remui %i, %c4 : index
}
'''


def use_xdsl_alone():
    ctx = Context()
    for dialect in (Builtin, Arith, Scf):
        ctx.load_dialect(dialect)
    module = Parser(ctx, XDSL_ONLY).parse_module()
    module.verify()
    Printer(stream=io.StringIO()).print_op(module)


def snapshot():
    state = {"gc": [list(gc.get_threshold()), gc.get_freeze_count()]}
    for name in MODULES:
        module = sys.modules[name]
        for attr, value in vars(module).items():
            if getattr(value, "__module__", None) != name:
                continue
            if isinstance(value, type):
                state[f"{name}.{attr}"] = sorted((k, id(v)) for k, v in vars(value).items() if k != "__abstractmethods__")
            elif isinstance(value, types.FunctionType):
                state[f"{name}.{attr}()"] = id(value)
    for dialect in (Arith, Scf, Builtin):
        for op in dialect.operations:
            if not hasattr(op, "get_irdl_definition"):  # builtin's UnregisteredOp
                continue
            state[f"{op.name} definition"] = [type(op.get_irdl_definition()).__qualname__,
                                              sorted((k, id(v)) for k, v in vars(op.get_irdl_definition()).items())]
    return state


use_xdsl_alone()
before = snapshot()

import torch
import hostir, hostir_dialect, hostir.passes, hostir.runtime
from hostir.passes import opt

example = "examples/fusions/ag_matmul.mlir"
with contextlib.redirect_stdout(io.StringIO()):
    assert opt.main([example, "-p", "hostir-lower"]) == 0
    assert opt.main([example, "--disable-verify"]) == 0
    try:
        sys.argv = ["hostir-opt", example, "-p", "hostir-lower{transport=auto}"]
        opt.console_main()
    except SystemExit as done:
        assert done.code == 0
with hostir.FusionDefinition() as fd:
    a = fd.define_tensor([4, 8], dtype="float32")
    fd.add_output(fd.ops.relu(a))
x = torch.randn(4, 8)
(out,) = fd.execute([x])
assert torch.equal(out, torch.relu(x))
use_xdsl_alone()

after = snapshot()
changed = sorted(key for key in before if after.get(key) != before[key])
print(json.dumps(changed))
"""


def test_importing_and_using_hostir_leaves_xdsl_as_upstream_ships_it() -> None:
    loaded = subprocess.run([sys.executable, "-c", LOADED_BY_HOSTIR], capture_output=True, text=True,
                            cwd=ROOT, timeout=300, check=True).stdout.split()
    assert {"xdsl.parser", "xdsl.printer", "xdsl.ir", "xdsl.irdl", "xdsl.dialects.arith", "xdsl.dialects.scf"} <= set(loaded)
    checked = subprocess.run([sys.executable, "-c", CHECK, " ".join(loaded)], capture_output=True, text=True,
                             cwd=ROOT, timeout=300)
    assert checked.returncode == 0, checked.stderr
    changed = json.loads(checked.stdout.splitlines()[-1])
    assert changed == [], f"hostir changed xDSL: {changed}"
