"""The generated op functions follow GE's ES Python generator's rules (es_generator/py_generator.h),
checked through ``inspect.signature`` for every operator of the library, and ``python -m ge.codegen``
generates an importable package for a user's operator library."""

import ast
import importlib
import inspect
import json
import keyword
import math
import struct
import subprocess
import sys
import traceback
from pathlib import Path
from typing import List, get_type_hints

import pytest

import ge
import ge.es.all as es_all
from ge.codegen import builtin_library_path, exported_names, op_module_source, snake
from ge.es import GraphBuilder, TensorHolder
from ge.es.all import (Add, BatchNorm, BatchNormOutput, Case, ConcatD, ConcatV2, Const, Conv2D, Exp, IdentityN,
                       If, MatMulV2, Relu, SplitD, TopKV2, TopKV2Output, While)
from ge.graph import DataType, Graph, Tensor

P = inspect.Parameter
LIBRARY = json.loads(builtin_library_path().read_text())
OPS = {op["name"]: op for op in LIBRARY["operators"]}
REPO = Path(__file__).resolve().parents[2]
CPP_KEYWORDS = {"default", "int", "if", "else", "for", "while", "class", "return", "new", "delete", "this",
                "auto", "bool", "char", "const", "float", "double", "long", "short", "signed", "switch", "case"}


def params(fn):
    return list(inspect.signature(fn).parameters.values())


def layout(fn):
    """[(name, kind, default or '-')]"""
    return [(p.name, p.kind, "-" if p.default is P.empty else p.default) for p in params(fn)]


def f32(x):
    return struct.unpack("f", struct.pack("f", x))[0]


def ge_default(ty, v):
    """The Python value of GE's printed default (floats through C's %f of the float32 value)."""
    def f(x):
        x = float(x)  # numbers, and the strings "inf", "-inf", "nan"
        return x if math.isinf(x) or math.isnan(x) else float("%f" % f32(x))
    if ty == "Tensor":
        return "Tensor()" if not v.get("values") else None
    if ty == "Float":
        return f(v)
    if ty == "ListFloat":
        return [f(x) for x in v]
    if ty == "Type":
        return DataType[v]
    if ty == "ListType":
        return [DataType[x] for x in v]
    return v


def same_default(a, b):
    if b == "Tensor()":
        return isinstance(a, Tensor) and a.numpy().size == 0
    if isinstance(a, float) and isinstance(b, float):
        return (math.isnan(a) and math.isnan(b)) or a == b
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(same_default(x, y) for x, y in zip(a, b))
    return type(a) is type(b) and a == b


def expected_positional(op):
    """[(name, has_default)] before the ``*``, by GE's rules."""
    inputs, outputs = op.get("inputs", []), op.get("outputs", [])
    names = [i["name"] for i in inputs]
    dyn_out = [o for o in outputs if o.get("kind") == "dynamic"]
    defaulted = set()
    if not dyn_out and not op.get("subgraphs"):
        for i in inputs:
            defaulted = defaulted | {i["name"]} if i.get("kind") == "optional" else set()
    out = [("in_" + i["name"] if keyword.iskeyword(i["name"]) else i["name"], i["name"] in defaulted)
           for i in inputs]
    if not inputs:
        out.insert(0, ("owner_graph_builder", False))
    elif all(i.get("kind") == "optional" for i in inputs):
        out.append(("owner_builder", bool(defaulted)))
    for o in dyn_out:
        n = o["name"]
        base = ("ref_" + ("in_" + n if n in CPP_KEYWORDS else n)) if n in names else \
            ("out_" + n if n in CPP_KEYWORDS else n)
        out.append((base + "_num", False))
    out += [("subgraph_" + s["name"] if keyword.iskeyword(s["name"]) else s["name"], False)
            for s in op.get("subgraphs", [])]
    return out


def attr_ident(name, op):
    if name in [i["name"] for i in op.get("inputs", [])]:
        return "attr_" + ("in_" + name if keyword.iskeyword(name) else name)
    return "attr_" + name if keyword.iskeyword(name) else name


def check_follows_rules(fn, op):
    """Checks one generated function against its operator's IR (GE's ES rules)."""
    ps = params(fn)
    positional = [p for p in ps if p.kind != P.KEYWORD_ONLY]
    assert all(p.kind == P.POSITIONAL_OR_KEYWORD for p in positional)
    assert [(p.name, p.default is not P.empty) for p in positional] == expected_positional(op), op["name"]
    for p in positional:
        assert p.default in (P.empty, None)
    # Every IR attribute keyword-only (N included): required first, then defaulted, IR order.
    kw = [p for p in ps if p.kind == P.KEYWORD_ONLY]
    assert len(positional) + len(kw) == len(ps)  # no *args / **kwargs
    attrs = op.get("attrs", [])
    ordered = [a for a in attrs if a.get("required")] + [a for a in attrs if not a.get("required")]
    assert [p.name for p in kw] == [attr_ident(a["name"], op) for a in ordered], op["name"]
    for p, a in zip(kw, ordered):
        if a.get("required"):
            assert p.default is P.empty, (op["name"], a["name"])
        else:
            assert same_default(p.default, ge_default(a["type"], a.get("default"))), (op["name"], a["name"], p.default)
    # Return: one output (or none) a TensorHolder, one dynamic output a list, else <Op>Output.
    ret = inspect.signature(fn).return_annotation
    outputs = op.get("outputs", [])
    if len(outputs) > 1:
        assert ret.__name__ == f"{op['name']}Output" and issubclass(ret, tuple)
    elif outputs and outputs[0].get("kind") == "dynamic":
        assert ret == List[TensorHolder]
    else:
        assert ret is TensorHolder
    # A docstring that documents every parameter.
    doc = inspect.getdoc(fn)
    assert doc and doc.strip()
    for p in ps:
        assert p.name in doc, (op["name"], p.name)


@pytest.mark.parametrize("name", sorted(OPS))
def test_every_builtin_op_follows_the_rules(name):
    fn = getattr(es_all, name)
    assert fn.__name__ == name
    check_follows_rules(fn, OPS[name])
    doc = OPS[name].get("doc")
    if doc:
        assert inspect.getdoc(fn).startswith(doc.strip())


def test_all_exports_every_op_and_output_type():
    multi = [f"{n}Output" for n, op in OPS.items() if len(op.get("outputs", [])) > 1]
    assert set(es_all.__all__) == set(OPS) | set(multi)
    assert len(es_all.__all__) == len(set(es_all.__all__))
    for n in es_all.__all__:
        assert getattr(es_all, n).__doc__


def test_elementwise_binary_signature():
    assert layout(Add) == [("x1", P.POSITIONAL_OR_KEYWORD, "-"), ("x2", P.POSITIONAL_OR_KEYWORD, "-")]
    assert inspect.signature(Add).return_annotation is TensorHolder


def test_optional_inputs_and_defaulted_attrs():
    assert layout(MatMulV2) == [
        ("x1", P.POSITIONAL_OR_KEYWORD, "-"), ("x2", P.POSITIONAL_OR_KEYWORD, "-"),
        ("bias", P.POSITIONAL_OR_KEYWORD, None), ("offset_w", P.POSITIONAL_OR_KEYWORD, None),
        ("transpose_x1", P.KEYWORD_ONLY, False), ("transpose_x2", P.KEYWORD_ONLY, False),
        ("offset_x", P.KEYWORD_ONLY, 0)]


def test_required_attrs_come_before_defaulted_ones():
    assert layout(Conv2D)[4:] == [
        ("strides", P.KEYWORD_ONLY, "-"), ("pads", P.KEYWORD_ONLY, "-"),
        ("dilations", P.KEYWORD_ONLY, [1, 1, 1, 1]), ("groups", P.KEYWORD_ONLY, 1),
        ("data_format", P.KEYWORD_ONLY, "NHWC"), ("offset_x", P.KEYWORD_ONLY, 0)]
    assert [(p.name, p.default) for p in params(Exp)[1:]] == [("base", -1.0), ("scale", 1.0), ("shift", 0.0)]


def test_dynamic_outputs_take_a_positional_count_then_the_subgraphs():
    assert layout(If) == [
        ("cond", P.POSITIONAL_OR_KEYWORD, "-"), ("input", P.POSITIONAL_OR_KEYWORD, "-"),
        ("output_num", P.POSITIONAL_OR_KEYWORD, "-"), ("then_branch", P.POSITIONAL_OR_KEYWORD, "-"),
        ("else_branch", P.POSITIONAL_OR_KEYWORD, "-")]
    assert inspect.signature(If).return_annotation == List[TensorHolder]
    assert get_type_hints(If)["then_branch"] is Graph
    assert get_type_hints(Case)["branches"] == List[Graph]
    assert [p.name for p in params(While)] == ["input", "output_num", "cond", "body", "parallel_iterations"]
    # GE asks for the count even where the library has a rule (num_split, len(x)); the rule checks it.
    assert [p.name for p in params(SplitD)] == ["x", "y_num", "split_dim", "num_split"]
    assert [p.name for p in params(IdentityN)] == ["x", "y_num"]
    b = GraphBuilder("g")
    x = b.create_input(0, shape=[2, 6])
    assert len(SplitD(x, 3, split_dim=1, num_split=3)) == 3
    with pytest.raises(ValueError, match="y_num is 2 but attribute 'num_split' is 3"):
        SplitD(x, 2, split_dim=1, num_split=3)
    # Named, the subgraphs and the count still work.
    c = b.create_input(1, data_type=DataType.DT_BOOL, shape=[])
    then_b, else_b = GraphBuilder("t"), GraphBuilder("e")
    for sb in (then_b, else_b):
        sb.set_graph_output(sb.create_input(0, shape=[2, 6]), 0)
    (out,) = If(c, [x], output_num=1, then_branch=then_b.build_and_reset(), else_branch=else_b.build_and_reset())
    assert out.get_producer().type == "If"


def test_n_is_a_keyword_attribute_checked_against_the_list():
    assert layout(ConcatD) == [("x", P.POSITIONAL_OR_KEYWORD, "-"), ("concat_dim", P.KEYWORD_ONLY, "-"),
                               ("N", P.KEYWORD_ONLY, 1)]
    assert inspect.signature(ConcatV2).parameters["N"].default == 1
    b = GraphBuilder("g")
    x = b.create_input(0, shape=[2])
    assert ConcatD([x, x, x, x], concat_dim=0).get_producer().get_attr("N") == 4  # default: len(x)
    assert ConcatD([x, x], concat_dim=0, N=2).get_producer().get_attr("N") == 2
    with pytest.raises(ValueError, match="attribute 'N' is 3 but input 'x' has 2 tensors"):
        ConcatD([x, x], concat_dim=0, N=3)


def test_ops_without_inputs_take_the_builder_first():
    assert layout(Const) == [("owner_graph_builder", P.POSITIONAL_OR_KEYWORD, "-"), ("value", P.KEYWORD_ONLY,
                                                                                      Const.__kwdefaults__["value"])]
    assert isinstance(Const.__kwdefaults__["value"], Tensor)
    b = GraphBuilder("g")
    c = Const(b, value=Tensor([1.0, 2.0], shape=[2]))
    assert c.get_owner_builder() is b
    # Ops with inputs find the builder from their tensors; none to be found is GE's ValueError.
    with pytest.raises(ValueError, match="explicit owner_builder is provided when supported"):
        IdentityN([[1.0]], 1)
    with pytest.raises(TypeError):
        IdentityN([[1.0]], 1, owner_builder=b)  # not GE's parameter
    x = b.create_input(0, shape=[1])
    outs = IdentityN([x, [2, 3]], 2)  # TensorLike in a list beside a tensor: ours
    assert len(outs) == 2 and all(t.get_owner_builder() is b for t in outs)


def test_multi_output_ops_return_named_tuples():
    assert inspect.signature(TopKV2).return_annotation is TopKV2Output
    assert TopKV2Output._fields == ("values", "indices")
    assert [(p.name, p.default) for p in params(TopKV2)[2:]] == [
        ("sorted", True), ("dim", -1), ("largest", True), ("indices_dtype", 3)]
    assert BatchNormOutput._fields == ("y", "batch_mean", "batch_variance", "reserve_space_1", "reserve_space_2",
                                       "reserve_space_3")
    b = GraphBuilder("g")
    x = b.create_input(0, shape=[4, 6])
    top = TopKV2(x, 3)
    assert isinstance(top, TopKV2Output) and isinstance(top, tuple) and len(top) == 2
    assert top.values is top[0] and top.indices is top[1]
    assert (top.values.output_index, top.indices.output_index) == (0, 1)
    assert top.values.get_producer() == top.indices.get_producer()
    values, indices = top
    assert values.name == indices.name == "TopKV2_0"
    bn = BatchNorm(b.create_input(1, shape=[1, 2, 2, 3]), b.create_input(2, shape=[3]), b.create_input(3, shape=[3]))
    assert isinstance(bn, BatchNormOutput)
    assert [t.output_index for t in bn] == list(range(6))
    assert bn.reserve_space_3 is bn[5]


def test_keyword_only_and_positional_rules_are_enforced():
    b = GraphBuilder("g")
    x = b.create_input(0, shape=[2, 2])
    with pytest.raises(TypeError):
        MatMulV2(x, x, None, None, True)  # attributes are keyword-only
    with pytest.raises(TypeError):
        Relu(x, x)
    assert Add(x1=x, x2=x).get_producer().type == "Add"  # inputs can be named
    assert MatMulV2(x, x, transpose_x2=True).get_producer().get_attr("transpose_x2") is True


def test_the_checked_in_stub_is_current():
    r = subprocess.run([python(), str(REPO / "tools" / "check_codegen.py")], capture_output=True, text=True,
                       cwd=REPO, timeout=120)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "current" in r.stdout


# the built-in op modules, generated on import ---------------------------------------------------


def test_builtin_op_modules_come_from_the_library_the_stub_is_checked_against():
    assert ge._native._builtin_ops_json() == builtin_library_path().read_text()


def test_each_builtin_op_module_is_what_the_generator_writes():
    """``ge.es.ops.<op>`` holds the generated source (``inspect`` reads it), its ``__file__`` names
    ``ge/es/ops/<op>.py`` and it exports the functions of ``ge.es.all``."""
    ops_dir = Path(ge.__file__).parent / "es" / "ops"
    for name, op in OPS.items():
        module = importlib.import_module(f"ge.es.ops.{snake(name)}")
        assert module.__file__ == str(ops_dir / f"{snake(name)}.py")
        assert inspect.getsource(module) == op_module_source(op)
        assert module.__doc__ == f"ES function of the {name} operator."
        for export in exported_names(op):
            assert getattr(module, export) is getattr(es_all, export)
            assert getattr(module, export).__module__ == module.__name__
    assert not [f.name for f in ops_dir.glob("*.py") if f.name != "__init__.py"]  # none is a file


def test_op_modules_import_again_and_as_attributes():
    import ge.es.ops

    assert ge.es.ops.relu is sys.modules["ge.es.ops.relu"] and "relu" in dir(ge.es.ops)
    old = sys.modules.pop("ge.es.ops.relu")
    try:
        again = importlib.import_module("ge.es.ops.relu")
        assert again is not old and inspect.getsource(again.Relu) == inspect.getsource(old.Relu)
        b = GraphBuilder("again")
        assert again.Relu(b.create_input(0, shape=[2])).get_producer().type == "Relu"
    finally:
        sys.modules["ge.es.ops.relu"] = old
        ge.es.ops.relu = old
    with pytest.raises(ModuleNotFoundError):
        importlib.import_module("ge.es.ops.no_such_op")
    with pytest.raises(AttributeError):
        ge.es.ops.no_such_op  # noqa: B018


def test_a_traceback_through_an_op_function_shows_its_generated_line():
    from ge.es.all import ReduceMax

    b = GraphBuilder("tb")
    x = b.create_input(0, shape=[2])
    with pytest.raises(ge.GraphBuildError) as info:
        ReduceMax(x, x)  # axes must be integers
    text = "".join(traceback.format_exception(info.value))
    assert f"{Path('ge', 'es', 'ops', 'reduce_max.py')}\", line 25, in ReduceMax" in text
    assert 'return _call_op("ReduceMax", (x, axes), (keep_dims, noop_with_empty_axes))' in text


# python -m ge.codegen on a user's library ----------------------------------------------------

CUSTOM = {
    "format_version": 1,
    "version": "0.1.0",
    "operators": [
        {"name": "MyScale", "doc": "Scales x by alpha.",
         "inputs": [{"name": "x", "kind": "required", "type": "T"},
                    {"name": "bias", "kind": "optional", "type": "T"}],
         "outputs": [{"name": "y", "kind": "required", "type": "T"}],
         "attrs": [{"name": "alpha", "type": "Float", "default": "inf"},
                   {"name": "mode", "type": "String", "required": True},
                   {"name": "dt", "type": "Type", "default": "DT_INT8"},
                   {"name": "lambda", "type": "ListFloat", "default": [1.5, "nan", "-inf"]},
                   {"name": "dts", "type": "ListType", "default": ["DT_FLOAT", "DT_BF16"]},
                   {"name": "grid", "type": "ListListInt", "default": [[1], [2, 3]]},
                   {"name": "init", "type": "Tensor", "default": {"dtype": "DT_FLOAT", "shape": [], "values": [0]}},
                   {"name": "axes", "type": "ListInt", "required": True},
                   {"name": "flags", "type": "ListBool", "default": [True]},
                   {"name": "tags", "type": "ListString", "default": ["a"]}],
         "subgraphs": [], "type_vars": {"T": ["DT_FLOAT", "DT_FLOAT16"]}, "derived_attrs": {}, "output_counts": {}},
        {"name": "MyGather",
         "inputs": [{"name": "x", "kind": "dynamic", "type": "T"},
                    {"name": "in", "kind": "optional", "type": ["DT_INT32"]}],
         "outputs": [{"name": "first", "kind": "required", "type": "T"},
                     {"name": "rest", "kind": "dynamic", "type": "T"},
                     {"name": "same", "kind": "dynamic", "type": "T"}],
         "attrs": [{"name": "N", "type": "Int", "default": 1}, {"name": "k", "type": "Int", "default": 2}],
         "subgraphs": [{"name": "body", "kind": "static"}, {"name": "branches", "kind": "dynamic"}],
         "type_vars": {"T": ["DT_FLOAT"]}, "derived_attrs": {"N": "len(x)"}, "output_counts": {"same": "len(x)"}},
        {"name": "MySink", "inputs": [{"name": "x", "kind": "required", "type": ["DT_FLOAT"]}], "outputs": [],
         "attrs": [], "subgraphs": [], "type_vars": {}, "derived_attrs": {}, "output_counts": {}},
        {"name": "MyFill", "doc": "All inputs optional.",
         "inputs": [{"name": "a", "kind": "optional", "type": ["DT_FLOAT"]},
                    {"name": "b", "kind": "optional", "type": ["DT_FLOAT"]}],
         "outputs": [{"name": "y", "kind": "required", "type": ["DT_FLOAT"]}],
         "attrs": [{"name": "v", "type": "Float", "default": 1e-7}], "subgraphs": [], "type_vars": {},
         "derived_attrs": {}, "output_counts": {}},
        {"name": "MyNames", "doc": "Names GE renames.",
         "inputs": [{"name": "x", "kind": "optional", "type": ["DT_FLOAT"]},
                    {"name": "lambda", "kind": "required", "type": ["DT_FLOAT"]},
                    {"name": "c", "kind": "optional", "type": ["DT_FLOAT"]}],
         "outputs": [{"name": "x", "kind": "dynamic", "type": ["DT_FLOAT"]},
                     {"name": "default", "kind": "dynamic", "type": ["DT_FLOAT"]},
                     {"name": "pass", "kind": "required", "type": ["DT_FLOAT"]}],
         "attrs": [{"name": "x", "type": "Int", "default": 0}, {"name": "class", "type": "Int", "default": 1}],
         "subgraphs": [{"name": "if", "kind": "static"}], "type_vars": {}, "derived_attrs": {}, "output_counts": {}},
    ],
}


def python():
    venv = REPO / ".venv" / "bin" / "python"
    return str(venv) if venv.exists() else sys.executable


@pytest.fixture
def generated(tmp_path, monkeypatch):
    lib = tmp_path / "ops.json"
    lib.write_text(json.dumps(CUSTOM))
    out = tmp_path / "myops"
    r = subprocess.run([python(), "-m", "ge.codegen", "--ops", str(lib), "--out", str(out), "--package", "myops"],
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    assert r.stdout.splitlines() == [f"generated 10 files in {out}",
                                     'mount it as ge.es.myops: [project.entry-points."ge.es.plugins"] myops = "myops"']
    monkeypatch.syspath_prepend(str(tmp_path))
    for m in [m for m in sys.modules if m == "myops" or m.startswith("myops.")]:
        del sys.modules[m]
    importlib.invalidate_caches()
    yield out, importlib.import_module("myops.all")
    for m in [m for m in sys.modules if m == "myops" or m.startswith("myops.")]:
        del sys.modules[m]


def test_codegen_cli_writes_a_package(generated):
    out, mod = generated
    assert sorted(p.name for p in (out / "ops").iterdir()) == ["__init__.py", "my_fill.py", "my_gather.py",
                                                                "my_names.py", "my_scale.py", "my_sink.py"]
    assert (out / "all.py").exists() and (out / "all.pyi").exists()
    ast.parse((out / "all.pyi").read_text())
    assert mod.__all__ == ["MyScale", "MyGather", "MyGatherOutput", "MySink", "MyFill", "MyNames", "MyNamesOutput"]
    assert "0.1.0" in mod.__doc__
    for op in CUSTOM["operators"]:
        check_follows_rules(getattr(mod, op["name"]), op)


def test_codegen_cli_signatures(generated):
    _, mod = generated
    assert layout(mod.MyScale) == [
        ("x", P.POSITIONAL_OR_KEYWORD, "-"), ("bias", P.POSITIONAL_OR_KEYWORD, None),
        ("mode", P.KEYWORD_ONLY, "-"), ("axes", P.KEYWORD_ONLY, "-"),
        ("alpha", P.KEYWORD_ONLY, float("inf")), ("dt", P.KEYWORD_ONLY, DataType.DT_INT8),
        ("attr_lambda", P.KEYWORD_ONLY, mod.MyScale.__kwdefaults__["attr_lambda"]),
        ("dts", P.KEYWORD_ONLY, [DataType.DT_FLOAT, DataType.DT_BF16]),
        ("grid", P.KEYWORD_ONLY, [[1], [2, 3]]), ("init", P.KEYWORD_ONLY, None),
        ("flags", P.KEYWORD_ONLY, [True]), ("tags", P.KEYWORD_ONLY, ["a"])]
    lam = mod.MyScale.__kwdefaults__["attr_lambda"]
    assert lam[0] == 1.5 and math.isnan(lam[1]) and lam[2] == float("-inf")
    assert inspect.getdoc(mod.MyScale).startswith("Scales x by alpha.")
    # A dynamic output takes away the optional input's default; counts, then subgraphs, positional.
    assert [(p.name, p.kind, p.default is P.empty) for p in params(mod.MyGather)] == [
        ("x", P.POSITIONAL_OR_KEYWORD, True), ("in_in", P.POSITIONAL_OR_KEYWORD, True),
        ("rest_num", P.POSITIONAL_OR_KEYWORD, True), ("same_num", P.POSITIONAL_OR_KEYWORD, True),
        ("body", P.POSITIONAL_OR_KEYWORD, True), ("branches", P.POSITIONAL_OR_KEYWORD, True),
        ("N", P.KEYWORD_ONLY, False), ("k", P.KEYWORD_ONLY, False)]
    assert get_type_hints(mod.MyGather)["branches"] == List[Graph]
    assert mod.MyGatherOutput._fields == ("first", "rest", "same")
    assert inspect.getdoc(mod.MyGather).startswith("The MyGather operator.")
    # No outputs: a TensorHolder (a handle on the node), no output structure.
    assert inspect.signature(mod.MySink).return_annotation is TensorHolder
    assert not hasattr(mod, "MySinkOutput")
    # All inputs optional: owner_builder after them.
    assert layout(mod.MyFill) == [("a", P.POSITIONAL_OR_KEYWORD, None), ("b", P.POSITIONAL_OR_KEYWORD, None),
                                  ("owner_builder", P.POSITIONAL_OR_KEYWORD, None), ("v", P.KEYWORD_ONLY, 0.0)]
    # GE's renaming: in_ (Python keyword input), ref_/out_ counts by GE's C++ rule, out_ (Python keyword
    # output field), subgraph_ (keyword subgraph), attr_ (keyword attribute, or an input's name).
    assert [p.name for p in params(mod.MyNames)] == ["x", "in_lambda", "c", "ref_x_num", "out_default_num",
                                                    "subgraph_if", "attr_x", "attr_class"]
    assert mod.MyNamesOutput._fields == ("ref_x", "default", "out_pass")


def test_generated_package_registers_its_operators_on_import(generated):
    out, mod = generated
    assert json.loads((out / "operators.json").read_text()) == CUSTOM
    b = GraphBuilder("g")
    x = b.create_input(0)
    y = mod.MyScale(x, mode="m", axes=[0])  # registered by the package's __init__
    assert y.get_producer().type == "MyScale"
    with pytest.raises(TypeError):
        mod.MyScale(x)  # required attributes are checked by Python first


def test_codegen_cli_errors(tmp_path):
    r = subprocess.run([python(), "-m", "ge.codegen", "--ops", str(tmp_path / "missing.json"), "--out",
                        str(tmp_path / "o"), "--package", "o"], capture_output=True, text=True, timeout=120)
    assert r.returncode != 0 and "missing.json" in r.stderr
    assert not (tmp_path / "o").exists()
    r = subprocess.run([python(), "-m", "ge.codegen", "--package", "o"], capture_output=True, text=True,
                       timeout=120)
    assert r.returncode == 1 and "--package needs --out" in r.stderr
