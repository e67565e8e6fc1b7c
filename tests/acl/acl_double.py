"""The ACL test double for the Python tests: builds ``crates/acl-sys/testdouble/`` (``SOURCES``:
a C library that stands in for Huawei's ACL runtime: "device" memory on the host, the supported
operators computed on the CPU, every call recorded, illegal use flagged) and reads its records.
It is a test double: nothing that passes against it has run on an NPU. The Rust tests use the
same sources through ``acl_sys::test_double``."""

from __future__ import annotations

import ctypes
import os
import subprocess
from pathlib import Path
from typing import List

TESTDOUBLE = Path(__file__).resolve().parents[2] / "crates" / "acl-sys" / "testdouble"
# The double's sources, compiled together into one library (acl_double_internal.h says what
# each one holds): the acl_*.c files, as acl_sys::test_double::SOURCES lists them.
SOURCES = sorted(TESTDOUBLE.glob("acl_*.c"))
LIBRARY_FILE = "libacl_test_double.so"


class AclTestDouble:
    """A built and loaded test double; ``root`` is what ``ASCEND_HOME_PATH`` should be."""

    def __init__(self, root: Path) -> None:
        self.root = Path(root)
        lib64 = self.root / "lib64"
        lib64.mkdir(parents=True, exist_ok=True)
        out = lib64 / LIBRARY_FILE
        cc = os.environ.get("CC", "cc")
        subprocess.run(
            [cc, "-std=c11", "-shared", "-fPIC", "-O1", "-Wl,-z,defs", "-o", str(out), *map(str, SOURCES), "-lm", "-lpthread"],
            check=True,
            capture_output=True,
        )
        for name in ("libascendcl.so", "libnnopbase.so", "libopapi.so"):
            link = lib64 / name
            if link.exists() or link.is_symlink():
                link.unlink()
            link.symlink_to(LIBRARY_FILE)
        # The same file the runtime will load through the symlinks: one library, one state.
        self._lib = ctypes.CDLL(str(out))
        self._lib.acl_test_double_calls.restype = ctypes.c_int64
        self._lib.acl_test_double_calls.argtypes = [ctypes.c_char_p]
        self._lib.acl_test_double_live.restype = ctypes.c_int64
        self._lib.acl_test_double_live.argtypes = [ctypes.c_char_p]
        self._lib.acl_test_double_violations.restype = ctypes.c_int64
        self._lib.acl_test_double_log.restype = ctypes.c_char_p
        self._lib.acl_test_double_fail_next.argtypes = [ctypes.c_char_p, ctypes.c_int, ctypes.c_char_p]
        self._lib.acl_test_double_set_device_count.argtypes = [ctypes.c_uint32]

    def reset(self) -> None:
        self._lib.acl_test_double_reset()

    def set_device_count(self, n: int) -> None:
        self._lib.acl_test_double_set_device_count(n)

    def fail_next(self, function: str, code: int, message: str) -> None:
        self._lib.acl_test_double_fail_next(function.encode(), code, message.encode())

    def calls(self, function: str) -> int:
        return self._lib.acl_test_double_calls(function.encode())

    def live(self, kind: str) -> int:
        return self._lib.acl_test_double_live(kind.encode())

    def violations(self) -> int:
        return self._lib.acl_test_double_violations()

    def log(self) -> str:
        return (self._lib.acl_test_double_log() or b"").decode()

    def call_names(self) -> List[str]:
        return [l.split()[0] for l in self.log().splitlines() if l and not l.startswith("VIOLATION")]
