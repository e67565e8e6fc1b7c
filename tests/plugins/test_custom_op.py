"""ge.custom_op: prototypes from infer-meta annotations (register_op), implementations
(register_op_impl) run as HOST kernels on the CPU backend at run time and at constant folding,
execution contexts, declare_launch_args (recorded, needs an NPU), plugin loading from
ASCEND_CUSTOM_OPP_PATH. Following GE's documented behaviour and messages."""

import ctypes
import itertools
import textwrap
import warnings
from typing import List, Optional, Tuple

import numpy as np
import pytest

import ge
import ge.custom_op as custom_op
import ge.es.all as es_all
import ge.ops
from ge.custom_op import _bridge as bridge
from ge.custom_op import bootstrap, proto
from ge.custom_op._ir_types import InputType, OutputType
from ge.es import GraphBuilder
from ge.graph import DataType
from ge.graph import Tensor as GeTensor
from ge.runtime import Tensor, TensorDesc
from ge.session import Session

_ids = itertools.count()


def _op(base: str) -> str:
    """A fresh op type (the operator library is process-wide)."""
    return f"{base}{next(_ids)}"


def _noop_impl(name: str) -> type:
    """An implementation class ``name`` whose execute does nothing."""
    return type(name, (), {"execute": lambda self, ctx: None})


@pytest.fixture(autouse=True)
def _clean(monkeypatch):
    monkeypatch.delenv(bootstrap.ENV_PY_CUSTOM_OP_PATH, raising=False)
    yield
    custom_op.clear_registered_op_impls()
    proto.clear_registered_op_protos()
    bridge.clear_op_impl_holders()
    bridge.clear_loaded_op_impl_modules()


def _f32(values) -> np.ndarray:
    return np.asarray(values, dtype=np.float32)


def _floats(t: Tensor) -> np.ndarray:
    """A numpy view of a float Tensor's host buffer, through its address."""
    return np.ctypeslib.as_array((ctypes.c_float * t.shape_size).from_address(t.addr))


def _run(build, *inputs):
    b = GraphBuilder("g")
    outs = build(b)
    for i, o in enumerate(outs):
        b.set_graph_output(o, i)
    s = Session({})
    s.add_graph(0, b.build_and_reset())
    return s, [t.numpy() for t in s.run_graph(0, [GeTensor(x) for x in inputs])]


def _register_add(op: str, calls: Optional[list] = None) -> None:
    @custom_op.register_op(op_type=op)
    def add_meta(x: TensorDesc, y: TensorDesc, *, alpha: float = 1.0) -> TensorDesc:
        return TensorDesc(x.shape, x.data_type)

    @custom_op.register_op_impl(op_type=op)
    class AddImpl(custom_op.EagerExecuteOp):
        def execute(self, x: Tensor, y: Tensor, *, alpha: float) -> None:
            if calls is not None:
                calls.append(alpha)
            ctx = custom_op.get_execute_ctx()
            z = ctx.malloc_output_tensor(0, x.shape, x.format, x.data_type)
            _floats(z)[:] = _floats(x) + alpha * _floats(y)


# --- register_op: the prototype --------------------------------------------------------------

def test_register_op_parses_inputs_attrs_outputs_and_defaults():
    op = _op("AllKinds")

    @custom_op.register_op(op_type=op, mutates_args=("x",))
    def meta(x: TensorDesc, maybe: Optional[TensorDesc], many: List[TensorDesc], *,
             t: Tensor, n: int = 1, f: float = 1.5, b: bool = False, s: str = "v",
             dt: DataType = DataType.DT_FLOAT16, li: List[int] = [1, 2],
             ll: List[List[int]] = [[1], [2, 3]]) -> Tuple[TensorDesc, List[TensorDesc]]:
        return x, []

    d = meta.__ge_op_proto_descriptor__
    assert [(i.name, i.kind) for i in d.inputs] == [
        ("x", InputType.REQUIRED), ("maybe", InputType.OPTIONAL), ("many", InputType.DYNAMIC)]
    assert [(a.name, a.type, a.is_required) for a in d.attrs] == [
        ("t", "VT_TENSOR", True), ("n", "VT_INT", False), ("f", "VT_FLOAT", False),
        ("b", "VT_BOOL", False), ("s", "VT_STRING", False), ("dt", "VT_DATA_TYPE", False),
        ("li", "VT_LIST_INT", False), ("ll", "VT_LIST_LIST_INT", False)]
    assert [(o.name, o.kind) for o in d.outputs] == [("x", OutputType.REQUIRED),
                                                     ("output1", OutputType.DYNAMIC)]
    assert d.to_bridge_dict()["attrs"][7]["default"] == [[1], [2, 3]]
    lib = ge.ops.get_op(op)  # it joined the operator library
    assert [(i["name"], i["kind"]) for i in lib["inputs"]] == [
        ("x", "required"), ("maybe", "optional"), ("many", "dynamic")]
    assert {a["name"]: a.get("default") for a in lib["attrs"]}["dt"] == "DT_FLOAT16"


def test_register_op_zero_inputs_and_outputs():
    @custom_op.register_op(op_type=_op("NoArg"))
    def meta() -> None:
        return None

    d = meta.__ge_op_proto_descriptor__
    assert (d.inputs, d.attrs, d.outputs) == ((), (), ())


@pytest.mark.parametrize("op_type", [None, "", 1])
def test_register_op_rejects_invalid_op_type(op_type):
    with pytest.raises(TypeError, match="register_op op_type must be a non-empty string") as e:
        custom_op.register_op(op_type=op_type)
    assert repr(op_type) in str(e.value)


def _fails(fn, match, error=TypeError, mutates_args=()):
    op = _op("Bad")
    with pytest.raises(error, match=match) as e:
        custom_op.register_op(op_type=op, mutates_args=mutates_args)(fn)
    assert f"register_op op_type '{op}' failed" in str(e.value)


def test_register_op_rejects_bad_functions_and_annotations():
    _fails(object(), "register_op expects a Python function")

    def no_annotation(x) -> TensorDesc: ...
    _fails(no_annotation, "input 'x' must have a type annotation")

    def primitive(x: int) -> TensorDesc: ...
    _fails(primitive, "unsupported input annotation for 'x'")

    def defaulted(x: TensorDesc = None) -> TensorDesc: ...
    _fails(defaulted, "input 'x' must not have a default value")

    def keyword_tensor(*, x: TensorDesc) -> TensorDesc: ...
    _fails(keyword_tensor, "unsupported attr annotation for 'x'")

    def variadic(*args: TensorDesc) -> TensorDesc: ...
    _fails(variadic, "does not support variadic parameter 'args'")

    def no_return(x: TensorDesc): ...
    _fails(no_return, "return type annotation is required")

    def optional_return(x: TensorDesc) -> Optional[TensorDesc]: ...
    _fails(optional_return, "unsupported return annotation")

    def bad_output(x: TensorDesc) -> Tuple[TensorDesc, int]: ...
    _fails(bad_output, "output index 1")


@pytest.mark.parametrize(("annotation", "default"), [
    (int, True), (float, 1), (bool, 1), (str, 1), (DataType, 0), (DataType, DataType.DT_MAX),
    (List[int], [True]), (List[int], (1, 2)), (List[List[int]], [[True]]), (int, None)])
def test_register_op_rejects_default_of_wrong_type(annotation, default):
    def meta(*, value=default) -> None: ...
    meta.__annotations__["value"] = annotation
    _fails(meta, "default value for attr 'value'")


def test_register_op_rejects_tensor_attr_default():
    def meta(*, value=None) -> None: ...
    meta.__annotations__["value"] = Tensor
    _fails(meta, "Tensor attr 'value' does not support a default")


@pytest.mark.parametrize("mutates_args", ["x", ("x", ("y", 1)), ("missing",), ("x", "x"),
                                          (("x", 2),), (("x", True),)])
def test_register_op_rejects_bad_mutates_args(mutates_args):
    def meta(x: TensorDesc, y: TensorDesc) -> Tuple[TensorDesc, TensorDesc]: ...
    _fails(meta, "mutates_args", (TypeError, ValueError), mutates_args)


def _meta_from(module: str, ret=TensorDesc):
    def meta(x: TensorDesc) -> TensorDesc:
        return x
    meta.__module__, meta.__qualname__ = module, "meta"
    meta.__annotations__["return"] = ret
    return meta


def test_register_op_same_source_is_idempotent_other_source_conflicts():
    op = _op("Conflict")
    first = _meta_from("src_a")
    custom_op.register_op(op_type=op)(first)
    custom_op.register_op(op_type=op)(_meta_from("src_a"))
    assert [d.infer_func for d in proto.get_registered_op_protos()] == [first]
    with pytest.raises(ValueError, match="descriptor content changed"):
        custom_op.register_op(op_type=op)(_meta_from("src_a", List[TensorDesc]))
    with pytest.raises(ValueError, match=f"op type '{op}' already registered") as e:
        custom_op.register_op(op_type=op)(_meta_from("src_b"))
    assert "existing source: module_name.func_name 'src_a.meta'" in str(e.value)
    assert "current source: module_name.func_name 'src_b.meta'" in str(e.value)


def test_register_op_refuses_an_operator_the_library_already_has():
    with pytest.raises(ValueError, match="'Add' is already an operator of the operator library"):
        custom_op.register_op(op_type="Add")(_meta_from("m"))


# --- the ES function and inference ------------------------------------------------------------

def test_infer_meta_receives_tensor_descs_and_attrs_and_decides_outputs():
    op = _op("Concat2")
    seen = []

    @custom_op.register_op(op_type=op)
    def meta(x: TensorDesc, bias: Optional[TensorDesc], *, axis: int = 0,
             out_type: DataType = DataType.DT_INT32) -> Tuple[TensorDesc, TensorDesc]:
        seen.append((x.shape.origin_shape.dims, x.data_type, bias, axis, out_type))
        dims = x.shape.origin_shape.dims
        dims[axis] *= 2
        return TensorDesc(dims, out_type), x

    b = GraphBuilder("g")
    x = b.create_input(0, data_type=DataType.DT_FLOAT16, shape=[2, 3])
    y, same = getattr(es_all, op)(x, None, axis=1)
    assert y._desc[:2] == (int(DataType.DT_INT32), [2, 6])
    assert same._desc[:2] == (int(DataType.DT_FLOAT16), [2, 3])
    assert seen[0] == ([2, 3], DataType.DT_FLOAT16, None, 1, DataType.DT_INT32)


def test_dynamic_inputs_and_outputs_are_lists():
    op = _op("Dyn")

    @custom_op.register_op(op_type=op)
    def meta(xs: List[TensorDesc], ws: List[TensorDesc], *, k: int = 0) -> List[TensorDesc]:
        return [TensorDesc([len(xs), len(ws), k], x.data_type) for x in xs]

    b = GraphBuilder("g")
    x = b.create_input(0, data_type=DataType.DT_FLOAT, shape=[1])
    outs = getattr(es_all, op)([x, x, x], [x], 3, k=7)
    assert [o._desc[1] for o in outs] == [[3, 1, 7]] * 3


def test_infer_meta_returning_the_wrong_thing_fails_inference():
    op = _op("BadInfer")

    @custom_op.register_op(op_type=op)
    def meta(x: TensorDesc) -> TensorDesc:
        return [x]

    b = GraphBuilder("g")
    x = b.create_input(0, data_type=DataType.DT_FLOAT, shape=[1])
    with pytest.raises(ge.GeError, match="must return a TensorDesc for output 'output0'"):
        getattr(es_all, op)(x)


def test_a_non_finite_default_is_not_supported_and_registers_nothing():
    op = _op("NanDefault")

    def meta(x: TensorDesc, *, v: float = float("nan")) -> TensorDesc:
        return x

    with pytest.raises(ValueError, match="not supported: the default nan of attr 'v'"):
        custom_op.register_op(op_type=op)(meta)
    assert proto.get_registered_op_protos() == []


# --- register_op_impl ---------------------------------------------------------------------------

def test_register_op_impl_descriptor_and_interfaces():
    op = _op("Impl")

    @custom_op.register_op_impl(op_type=op)
    class Both:
        def execute(self, ctx):
            pass

        def declare_launch_args(self) -> None:
            pass

    (d,) = custom_op.get_registered_op_impl_dicts()
    assert d == {"descriptor_key": f"{__name__}:Both:{op}", "op_type": op,
                 "module_name": __name__, "class_name": "Both",
                 "interfaces": ["eager_execute", "annotated_args"]}
    assert custom_op.get_registered_op_impl_by_descriptor_key(d["descriptor_key"]).cls is Both
    assert op in ge.ops.kernel_op_types()
    custom_op.clear_registered_op_impls()
    assert op not in ge.ops.kernel_op_types()


def test_register_op_impl_errors():
    op = _op("Dup")

    custom_op.register_op_impl(op_type=op)(_noop_impl("First"))
    with pytest.raises(ValueError, match="op impl type already exists"):
        custom_op.register_op_impl(op_type=op)(_noop_impl("Second"))

    for bad in ("", None):
        with pytest.raises(TypeError, match="non-empty string"):
            custom_op.register_op_impl(op_type=bad)
    with pytest.raises(TypeError, match="register_op_impl expects a class"):
        custom_op.register_op_impl(op_type=_op("X"))(lambda: None)
    with pytest.raises(TypeError, match="register_op_impl expects a concrete class"):
        custom_op.register_op_impl(op_type=_op("X"))(custom_op.EagerExecuteOp)
    with pytest.raises(TypeError, match="must implement at least one supported method: "
                                        "execute, declare_launch_args"):
        @custom_op.register_op_impl(op_type=_op("X"))
        class Nothing:
            declare_launch_args = 1


def test_contexts_are_only_available_inside_their_callbacks():
    with pytest.raises(RuntimeError, match="only available inside schema-bound execute"):
        custom_op.get_execute_ctx()
    with pytest.raises(RuntimeError, match="only available inside declare_launch_args"):
        custom_op.get_declare_launch_args_ctx()
    for cls in (custom_op.EagerOpExecutionContext, custom_op.AnnotatedArgsContext,
                custom_op.AnnotatedKernelArgs, custom_op.WorkspaceAddr):
        with pytest.raises(TypeError):
            cls()


def test_launch_info_validates_its_fields():
    info = custom_op.AnnotatedKernelLaunchInfo(kernel_name="k", kernel_bin=b"\x01", block_dim=1,
                                               stream_id=0)
    assert info.kernel_name == "k"
    for field, value in (("kernel_name", ""), ("kernel_bin", b""), ("block_dim", 0),
                         ("stream_id", -1)):
        kw = dict(kernel_name="k", kernel_bin=b"\x01", block_dim=1, stream_id=0)
        kw[field] = value
        with pytest.raises(ValueError, match=field):
            custom_op.AnnotatedKernelLaunchInfo(**kw)


# --- HOST kernels on the CPU backend ------------------------------------------------------------

def test_host_kernel_runs_execute_with_ctypes_writes_and_attrs():
    op, calls = _op("AddPy"), []
    _register_add(op, calls)
    _, (z,) = _run(lambda b: [getattr(es_all, op)(b.create_input(0, shape=[3]),
                                                  b.create_input(1, shape=[3]), alpha=2.0)],
                   _f32([1, 2, 3]), _f32([10, 20, 30]))
    np.testing.assert_array_equal(z, [21, 42, 63])
    assert calls == [2.0]


def test_legacy_execute_ctx_reads_inputs_attrs_workspace_and_ref_output():
    op = _op("Legacy")
    seen = {}

    @custom_op.register_op(op_type=op)
    def meta(x: TensorDesc, y: Optional[TensorDesc], *, scale: float = 1.0,
             tags: List[str] = ["a"]) -> Tuple[TensorDesc, TensorDesc]:
        return x, x

    @custom_op.register_op_impl(op_type=op)
    class Legacy(custom_op.EagerExecuteOp):
        def execute(self, ctx):
            attrs = ctx.get_attrs()
            seen.update(n=ctx.get_input_num(), opt=ctx.get_optional_input_tensor(1),
                        scale=attrs.get_float(0), tags=attrs.get_list_str(1),
                        num=attrs.get_attr_num(), stream=ctx.get_stream())
            with pytest.raises(RuntimeError, match="is VT_FLOAT, not VT_INT"):
                attrs.get_int(0)
            x = ctx.get_input_tensor(0)
            ws = ctx.malloc_workspace(16)
            (ctypes.c_float * 4).from_address(ws)[0] = 5.0  # host memory, writable
            out = ctx.malloc_output_tensor(0, x.shape, x.format, x.data_type)
            _floats(out)[:] = _floats(x) * attrs.get_float(0) + (ctypes.c_float * 1).from_address(ws)[0]
            ref = ctx.make_output_ref_input(1, 0)
            seen["ref_same_addr"] = ref.addr == x.addr
            assert ctx.get_output_tensor(1).addr == x.addr

    _, (a, b) = _run(lambda g: list(getattr(es_all, op)(g.create_input(0, shape=[2]), None,
                                                        scale=3.0, tags=["p", "q"])),
                     _f32([1, 2]))
    np.testing.assert_array_equal(a, [8, 11])
    np.testing.assert_array_equal(b, [1, 2])
    assert seen == {"n": 2, "opt": None, "scale": 3.0, "tags": ["p", "q"], "num": 2, "stream": 0,
                    "ref_same_addr": True}


def test_impl_of_a_reg_op_prototype_runs(tmp_path):
    """GE's sample flow: the prototype from REG_OP, the implementation in Python."""
    op = _op("RegOpAdd")
    ge.ops.register_regop(f"""REG_OP({op})
        .INPUT(x, TensorType({{DT_FLOAT}}))
        .INPUT(y, TensorType({{DT_FLOAT}}))
        .OUTPUT(z, TensorType({{DT_FLOAT}}))
        .OP_END_FACTORY_REG({op})""")

    @custom_op.register_op_impl(op_type=op)
    class Impl:
        def execute(self, x, y):
            z = custom_op.get_execute_ctx().malloc_output_tensor(0, x.shape, x.format,
                                                                 x.data_type)
            _floats(z)[:] = _floats(x) + _floats(y)

    _, (z,) = _run(lambda b: [getattr(es_all, op)(b.create_input(0, shape=[-1]),
                                                  b.create_input(1, shape=[-1]))],
                   _f32([1, 2]), _f32([3, 4]))
    np.testing.assert_array_equal(z, [4, 6])


def test_two_dynamic_inputs_dynamic_outputs_and_a_tensor_attr_at_run_time():
    op = _op("DynRun")

    @custom_op.register_op(op_type=op)
    def meta(xs: List[TensorDesc], ws: List[TensorDesc], *, t: Tensor) -> List[TensorDesc]:
        return [TensorDesc(x.shape, x.data_type) for x in xs]

    @custom_op.register_op_impl(op_type=op)
    class Impl:
        def execute(self, xs: List[Tensor], ws: List[Tensor], *, t: Tensor) -> None:
            ctx = custom_op.get_execute_ctx()
            for i, x in enumerate(xs):
                o = ctx.malloc_output_tensor(i, x.shape, x.format, x.data_type)
                _floats(o)[:] = _floats(x) * len(ws) + _floats(t).sum()

    def build(b):
        x = b.create_input(0, shape=[2])
        return getattr(es_all, op)([x, x], [x, x, x], 2, t=GeTensor(_f32([0.25, 0.25])))

    _, outs = _run(build, _f32([1, 2]))
    for o in outs:
        np.testing.assert_array_equal(o, [3.5, 6.5])


def test_execute_that_does_not_allocate_an_output_fails_the_run():
    op = _op("NoOut")

    @custom_op.register_op(op_type=op)
    def meta(x: TensorDesc) -> TensorDesc:
        return x

    @custom_op.register_op_impl(op_type=op)
    class NoOut:
        def execute(self, x):
            pass

    with pytest.raises(ge.ExecutionError, match="did not allocate output 0"):
        _run(lambda b: [getattr(es_all, op)(b.create_input(0, shape=[1]))], _f32([1]))


def test_execute_signature_is_checked_against_the_prototype():
    op = _op("Sig")

    @custom_op.register_op(op_type=op)
    def meta(x: TensorDesc, *, alpha: float = 1.0) -> TensorDesc:
        return x

    @custom_op.register_op_impl(op_type=op)
    class Wrong:
        def execute(self, x, *, beta):
            pass

    with pytest.raises(ge.ExecutionError,
                       match="invalid execute signature.*expected attr name alpha.*actual attr "
                             "name beta"):
        _run(lambda b: [getattr(es_all, op)(b.create_input(0, shape=[1]))], _f32([1]))


def test_all_constant_inputs_fold_at_compile_through_the_host_kernel():
    op, calls = _op("FoldAdd"), []
    _register_add(op, calls)

    def build(b):
        c = getattr(es_all, op)(b.create_const_float([1.0, 2.0]), b.create_const_float([3.0, 4.0]))
        return [es_all.Add(c, b.create_input(0, shape=[2]))]

    s, (z,) = _run(build, _f32([10, 10]))
    np.testing.assert_array_equal(z, [14, 16])
    s.run_graph(0, [GeTensor(_f32([0, 0]))])
    assert calls == [1.0]  # run once, at compile: the node became a Const
    assert "constants folded 1" in s.compile_report(0)


def test_declare_launch_args_is_recorded_and_needs_an_npu():
    op = _op("Dla")
    seen = []

    @custom_op.register_op(op_type=op)
    def meta(x1: TensorDesc, x2: TensorDesc) -> TensorDesc:
        return x1

    @custom_op.register_op_impl(op_type=op)
    class Dla:
        def declare_launch_args(self, x1: Tensor, x2: Tensor, y: Tensor) -> None:
            ctx = custom_op.get_declare_launch_args_ctx()
            args = ctx.create_kernel_args()
            args.append_input(0, x1)
            args.append_input(1, x2)
            args.append_output(0, y)
            args.append_workspace(ctx.malloc_workspace(32))
            args.append_scalar(7)
            seen.append(y.storage_shape.dims)
            ctx.add_launch(custom_op.AnnotatedKernelLaunchInfo(
                kernel_name="add_custom", kernel_bin=b"\x7fELF", block_dim=8,
                stream_id=ctx.get_stream_id()), args)

    with pytest.raises(ge.ExecutionError, match=r"not supported: .*1 device kernel launch.*"
                                                r"'add_custom' block_dim 8 with 5 args.*needs an NPU"):
        _run(lambda b: [getattr(es_all, op)(b.create_input(0, shape=[4]),
                                            b.create_input(1, shape=[4]))],
             _f32([1, 2, 3, 4]), _f32([1, 2, 3, 4]))
    assert seen == [[4]]


def test_bridge_binds_schema_inputs_and_attrs_through_the_context():
    op = _op("Bridge")
    got = []

    @custom_op.register_op_impl(op_type=op)
    class Schema:
        @staticmethod
        def execute(x, maybe, many, *, alpha):
            got.append((x, maybe, many, alpha, custom_op.get_execute_ctx()))

    class FakeCtx:
        invalidated = False

        def get_required_input_tensor(self, i):
            return ("req", i)

        def get_optional_input_tensor(self, i):
            return None

        def get_dynamic_input_num(self, i):
            return 2

        def get_dynamic_input_tensor(self, i, j):
            return ("dyn", i, j)

        def get_attrs(self):
            class Attrs:
                def get_float(self, i):
                    return 0.5
            return Attrs()

        def _invalidate(self):
            self.invalidated = True

    ir = {"op_type": op, "inputs": [{"name": "x", "kind": 0}, {"name": "maybe", "kind": 1},
                                    {"name": "many", "kind": 2}],
          "attrs": [{"name": "alpha", "type": "VT_FLOAT"}], "outputs": []}
    key = custom_op.get_registered_op_impl_dicts()[0]["descriptor_key"]
    assert bridge.validate_op_impl_descriptor(key, ir) is True
    assert bridge.create_op_impl_holder("i#1", key) is True
    ctx = FakeCtx()
    bridge.call_execute("i#1", ir, ctx)
    assert got == [(("req", 0), None, [("dyn", 2, 0), ("dyn", 2, 1)], 0.5, ctx)]
    assert ctx.invalidated
    with pytest.raises(RuntimeError, match="canonical IR not found for schema-bound execute"):
        bridge.validate_op_impl_descriptor(key, None)
    with pytest.raises(KeyError, match="descriptor_key not found"):
        bridge.create_op_impl_holder("i#2", "missing")


# --- plugins from ASCEND_CUSTOM_OPP_PATH --------------------------------------------------------

def _plugin(path, op: str) -> None:
    path.write_text(textwrap.dedent(f"""
        import ctypes
        from ge.custom_op import get_execute_ctx, register_op, register_op_impl
        from ge.runtime import TensorDesc

        LOADS = globals().setdefault("LOADS", 0) + 1

        @register_op(op_type="{op}")
        def meta(x: TensorDesc) -> TensorDesc:
            return x

        @register_op_impl(op_type="{op}")
        class Neg:
            def execute(self, x):
                y = get_execute_ctx().malloc_output_tensor(0, x.shape, x.format, x.data_type)
                src = (ctypes.c_float * x.shape_size).from_address(x.addr)
                dst = (ctypes.c_float * y.shape_size).from_address(y.addr)
                for i in range(x.shape_size):
                    dst[i] = -src[i]
    """))


def test_plugins_load_at_session_creation_each_file_isolated(tmp_path, monkeypatch):
    op = _op("PluginNeg")
    _plugin(tmp_path / "neg_op.py", op)
    (tmp_path / "broken_op.py").write_text("raise RuntimeError('broken plugin')\n")
    (tmp_path / "_private.py").write_text("raise RuntimeError('never imported')\n")
    monkeypatch.setenv(bootstrap.ENV_PY_CUSTOM_OP_PATH, str(tmp_path))
    with pytest.warns(UserWarning, match=r"broken_op\.py.*broken plugin"):
        Session({})
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        _, (y,) = _run(lambda b: [getattr(es_all, op)(b.create_input(0, shape=[2]))], _f32([1, -2]))
    np.testing.assert_array_equal(y, [-1, 2])
    import sys
    (mod,) = [m for n, m in sys.modules.items() if n.startswith("_ge_py_custom_op_neg_op")]
    assert mod.LOADS == 1  # imported once however many sessions start


def test_ge_form_loader_raises_for_a_missing_path(monkeypatch):
    monkeypatch.setenv(bootstrap.ENV_PY_CUSTOM_OP_PATH, "/path/not/exist/custom_op.py")
    with pytest.raises(FileNotFoundError, match="python custom op path does not exist"):
        bridge.load_and_get_op_impl_descriptors()


def test_example_program_runs_and_folds():
    import subprocess
    import sys
    from pathlib import Path

    run = Path(__file__).resolve().parents[2] / "examples" / "custom_op" / "run.py"
    r = subprocess.run([sys.executable, str(run)], capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "[Sample] output: [105.5, 111.0, 116.5, 122.0]" in r.stdout
    assert "constants folded 1" in r.stdout
    # the constant node ran once, at compile; the other once per run
    assert r.stdout.count("alpha=1.0") == 1 and r.stdout.count("alpha=0.5") == 1


def test_a_registered_op_mounts_as_a_ge_es_module():
    """GE programs import custom ES functions from ge.es.<package> (GE's gen_esb output);
    ge-rs mounts run-time operators under such a name."""
    from ge.es._plugin_loader import mount_runtime_ops, unmount_runtime_ops

    op = _op("Mounted")
    _register_add(op)
    name = f"custom_ops_{op.lower()}"
    mount_runtime_ops(name, [op])
    try:
        import importlib

        fn = getattr(importlib.import_module(f"ge.es.{name}"), op)
        _, (z,) = _run(lambda b: [fn(b.create_input(0, shape=[1]), b.create_input(1, shape=[1]))],
                       _f32([1]), _f32([2]))
        np.testing.assert_array_equal(z, [3])
    finally:
        unmount_runtime_ops(name)
