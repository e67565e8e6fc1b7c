"""The `_native.pyi` stub names exactly what the extension exports, member by member, with the
extension's signatures (mypy's stubtest)."""

import ast
import inspect
import subprocess
import sys
from pathlib import Path

import ge
from ge import _native

STUB = Path(ge.__file__).with_name("_native.pyi")


def stub_tree():
    tree = ast.parse(STUB.read_text())
    top, members = set(), {}
    for node in tree.body:
        if isinstance(node, ast.ClassDef):
            top.add(node.name)
            members[node.name] = {n.name for n in node.body if isinstance(n, ast.FunctionDef)}
        elif isinstance(node, ast.FunctionDef):
            top.add(node.name)
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            top.add(node.target.id)
        elif isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("ge"):
            # a re-export (`from ge.error import GeError as GeError`)
            top.update(a.asname for a in node.names if a.asname == a.name)
    return top, members


def public(obj):
    return {n for n in vars(obj) if not n.startswith("__") or n in {
        "__add__", "__radd__", "__sub__", "__rsub__", "__mul__", "__rmul__", "__truediv__", "__rtruediv__",
        "__matmul__", "__rmatmul__", "__pow__", "__rpow__", "__neg__", "__copy__", "__deepcopy__"}}


def test_module_names_match():
    top, _ = stub_tree()
    exported = {n for n in dir(_native) if not n.startswith("__") or n == "__version__"}
    assert top == exported


def test_class_members_match():
    _, members = stub_tree()
    for cls, names in members.items():
        obj = getattr(_native, cls)
        if issubclass(obj, BaseException):
            continue
        actual = {n for n in public(obj) if callable(getattr(obj, n, None)) or isinstance(
            inspect.getattr_static(obj, n), (property, type(_native.Graph.name)))}
        actual -= {"__new__"}
        assert names - {"__new__"} == actual, cls


def test_stubtest_passes(tmp_path: Path) -> None:
    """mypy's stubtest (a test extra) finds no difference between the stub and the extension:
    names, signatures, defaults, positional-only parameters, final and disjoint-base classes."""
    r = subprocess.run(
        [sys.executable, "-m", "mypy.stubtest", "ge._native"],
        capture_output=True,
        text=True,
        cwd=tmp_path,  # mypy's cache goes there
        timeout=600,
    )
    assert r.returncode == 0, r.stdout + r.stderr


ES_ALL_STUB = Path(ge.__file__).parent / "es" / "all.pyi"


def test_es_all_stub_has_the_generated_signatures():
    """``ge/es/all.pyi`` declares every ES function with the signature of its module, and every
    output structure with its fields."""
    import ge.es.all as es_all

    tree = ast.parse(ES_ALL_STUB.read_text())
    funcs = {n.name: n for n in tree.body if isinstance(n, ast.FunctionDef)}
    classes = {n.name: n for n in tree.body if isinstance(n, ast.ClassDef)}
    assert set(funcs) | set(classes) == set(es_all.__all__)
    for name, node in funcs.items():
        real = ast.parse(inspect.getsource(getattr(es_all, name))).body[0]
        assert isinstance(real, ast.FunctionDef)
        assert ast.dump(node.args) == ast.dump(real.args), name
        assert ast.dump(node.returns) == ast.dump(real.returns), name
    for name, node in classes.items():
        fields = tuple(n.target.id for n in node.body if isinstance(n, ast.AnnAssign))
        assert fields == getattr(es_all, name)._fields, name
