"""Fails when the checked-in stub ``python/ge/es/all.pyi`` differs from what ge.codegen generates now.

(The built-in op modules ``ge.es.ops.<op>`` themselves are generated on import, not checked in.)
"""

import importlib.util
import json
import sys
from pathlib import Path

root = Path(__file__).resolve().parents[1]
spec = importlib.util.spec_from_file_location("ge_codegen", root / "python" / "ge" / "codegen.py")
assert spec is not None and spec.loader is not None
codegen = importlib.util.module_from_spec(spec)
spec.loader.exec_module(codegen)

stub = codegen.builtin_stub_path()
lib = json.loads(codegen.builtin_library_path().read_text())
if not stub.exists() or stub.read_text() != codegen.builtin_stub(lib):
    print(f"{stub.relative_to(root)} is stale; run `make codegen`")
    sys.exit(1)
print(f"generated stub is current ({stub.relative_to(root)}, {len(lib['operators'])} operators)")
