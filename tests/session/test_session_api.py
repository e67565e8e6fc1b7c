"""GE's session and global set-up API as GE documents it: return values, argument checks with GE's
messages, ``ge.error.GeError`` (api_name, context, error_message) for failed calls, and how it
fits ge-rs's ``ge.GeError`` tree."""

from __future__ import annotations

import threading

import numpy as np
import pytest

import ge
import ge.error
import ge.session
from ge.error import GeError, get_ge_error_msg, raise_ge_error
from ge.es import GraphBuilder
from ge.es.all import Add, Div, MatMulV2
from ge.ge_global import GeApi
from ge.graph import DataType, Graph, Tensor
from ge.session import Session
from common import assert_refuses_copy

F32 = DataType.DT_FLOAT


def add_graph() -> Graph:
    b = GraphBuilder("add")
    x = b.create_input(0, data_type=F32, shape=[2])
    y = b.create_input(1, data_type=F32, shape=[2])
    return b.build_and_reset([Add(x, y)])


def int_div_graph() -> Graph:
    b = GraphBuilder("div")
    x = b.create_input(0, data_type=DataType.DT_INT32, shape=[2])
    y = b.create_input(1, data_type=DataType.DT_INT32, shape=[2])
    return b.build_and_reset([Div(x, y)])


@pytest.fixture(autouse=True)
def _finalize():
    yield
    GeApi.ge_finalize()


# ---------------------------------------------------------------------------------------------
# The exception classes
# ---------------------------------------------------------------------------------------------


def test_ge_error_is_ges_and_the_root_of_our_tree():
    assert ge.GeError is GeError and ge.errors.GeError is GeError and ge.session.GeError is GeError
    assert issubclass(GeError, RuntimeError)
    for cls in (ge.GraphBuildError, ge.ShapeInferenceError, ge.CompatibilityError, ge.PassError,
                ge.TranslationError, ge.ExecutionError, ge.DeviceError):
        assert issubclass(cls, GeError) and issubclass(cls, RuntimeError)


def test_ge_error_has_ges_attributes():
    e = GeError("RunGraph failed; graph_id=1; boom", error_message="boom", api_name="RunGraph",
                context={"graph_id": 1})
    assert str(e) == "RunGraph failed; graph_id=1; boom"
    assert (e.error_message, e.api_name, e.context) == ("boom", "RunGraph", {"graph_id": 1})
    plain = GeError("x")
    assert (plain.error_message, plain.api_name, plain.context) == (None, None, {})
    # Our subclasses take the same arguments.
    ee = ge.ExecutionError("m", api_name="RunGraph")
    assert ee.api_name == "RunGraph" and ee.context == {}


def test_errors_outside_api_calls_carry_no_api_name():
    with pytest.raises(GeError, match="cannot read") as e:
        Graph.load("/nonexistent/graph.ge")
    assert e.value.api_name is None and e.value.context == {} and e.value.error_message is None


def test_raise_ge_error_builds_ges_message():
    get_ge_error_msg()  # forget an earlier test's failure
    with pytest.raises(GeError) as e:
        raise_ge_error("RunGraph", 145000, graph_id=7, stream="0x10")
    assert str(e.value) == "RunGraph failed; graph_id=7, stream=0x10"
    assert e.value.api_name == "RunGraph" and e.value.context == {"graph_id": 7, "stream": "0x10"}
    assert e.value.error_message == ""
    with pytest.raises(GeError, match="^GEFinalize failed$"):
        raise_ge_error("GEFinalize")


def test_raise_ge_error_takes_the_latest_failures_message_once():
    s = Session()
    with pytest.raises(GeError):
        s.run_graph(9, [])
    with pytest.raises(GeError) as e:
        raise_ge_error("MyCall", step=2)
    assert str(e.value) == "MyCall failed; step=2; graph id 9 is not in the session"
    assert e.value.error_message == "graph id 9 is not in the session"
    assert get_ge_error_msg() == ""  # taken


def test_the_latest_message_is_per_thread():
    s = Session()
    with pytest.raises(GeError):
        s.remove_graph(4)
    seen = []
    t = threading.Thread(target=lambda: seen.append(get_ge_error_msg()))
    t.start()
    t.join()
    assert seen == [""]
    assert get_ge_error_msg() == "graph id 4 is not in the session"


# ---------------------------------------------------------------------------------------------
# GeApi
# ---------------------------------------------------------------------------------------------


def test_ge_initialize_and_finalize_return_zero():
    api = GeApi()
    assert api.ge_initialize({"ge.exec.deviceId": "0", "ge.graphRunMode": "0"}) == 0
    assert api.ge_finalize() == 0
    assert GeApi.ge_finalize() == 0  # without an initialize, as GE
    assert GeApi.ge_initialize({"ge.exec.deviceId": "2", "ge.graphRunMode": "0"}) == 0
    assert GeApi.ge_initialize({"ge.graphRunMode": "1"}) == 0  # again: replaces the options


@pytest.mark.parametrize("config", [{1, "ge.graphRunMode"}, [("ge.graphRunMode", "0")], "ge.graphRunMode=0", 0])
def test_ge_initialize_needs_a_dict(config):
    with pytest.raises(TypeError, match="^Ge init config must be a dictionary$"):
        GeApi.ge_initialize(config)


def test_ge_initialize_needs_a_non_empty_config():
    with pytest.raises(TypeError, match="^Ge init config must not be empty$"):
        GeApi().ge_initialize({})


def test_ge_initialize_failure_is_a_ge_error():
    with pytest.raises(GeError) as e:
        GeApi.ge_initialize({"ge.graphCacheCapacity": "0"})
    assert e.value.api_name == "GEInitialize" and e.value.context == {}
    assert str(e.value) == "GEInitialize failed; " + e.value.error_message
    assert "ge.graphCacheCapacity must be a positive integer" in e.value.error_message


# ---------------------------------------------------------------------------------------------
# Session: construction and copies
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize("options", [{"ge.exec.deviceId"}, [("ge.threads", "1")], "ge.threads=1", 1])
def test_session_options_must_be_a_dict(options):
    with pytest.raises(TypeError, match="^option must be a dictionary$"):
        Session(options)


def test_session_with_ge_options():
    assert isinstance(Session({"ge.exec.enableDump": "0"}), Session)
    assert isinstance(Session(None), Session) and isinstance(Session({}), Session)


def test_a_session_cannot_be_copied():
    s = Session()
    assert_refuses_copy(s, "Session", exact=True)
    with pytest.raises(RuntimeError, match="Session does not support copy"):
        s.__copy__()
    with pytest.raises(RuntimeError, match="Session does not support deepcopy"):
        s.__deepcopy__({})


def test_create_session_failure_is_a_ge_error():
    with pytest.raises(GeError, match=r"^CreateSession failed; ge.threads must be a positive integer") as e:
        Session({"ge.threads": "0"})
    assert e.value.api_name == "CreateSession" and isinstance(e.value, ValueError)


# ---------------------------------------------------------------------------------------------
# add_graph / remove_graph
# ---------------------------------------------------------------------------------------------


def test_add_graph_returns_zero_and_remove_graph_none():
    s = Session()
    ret = s.add_graph(1, add_graph())
    assert ret == 0
    assert s.add_graph(2, add_graph(), {"ge.graphRunMode": "0"}) == 0
    assert s.add_graph(graph_id=3, add_graph=add_graph(), options=None) == 0  # GE's parameter names
    assert sorted(s.get_graph_ids()) == [1, 2, 3]
    assert s.remove_graph(1) is None
    assert sorted(s.get_graph_ids()) == [2, 3]


@pytest.mark.parametrize("graph_id", ["test", 1.0, None, [1]])
def test_graph_id_must_be_an_integer(graph_id):
    s = Session()
    s.add_graph(1, add_graph())
    with pytest.raises(TypeError, match="^Graph_id must be an integer$"):
        s.add_graph(graph_id, add_graph())
    with pytest.raises(TypeError, match="^Graph_id must be an integer$"):
        s.remove_graph(graph_id)
    with pytest.raises(TypeError, match="^Graph_id must be an integer$"):
        s.run_graph(graph_id, [])
    with pytest.raises(TypeError, match="^Graph_id must be an integer$"):
        s.run_graph_with_stream_async(graph_id, 1, [])


def test_graph_ids_outside_32_bits_are_value_errors():
    # GE would wrap them to 32 bits silently; ge-rs refuses them.
    s = Session()
    with pytest.raises(ValueError, match=r"graph_id must be in \[0, 2\*\*32\), got -1"):
        s.add_graph(-1, add_graph())
    with pytest.raises(ValueError, match="got 4294967296"):
        s.run_graph(2**32, [])


def test_add_graph_argument_checks():
    s = Session()
    with pytest.raises(TypeError, match="^Add_graph must be a Graph$"):
        s.add_graph(0, s)
    with pytest.raises(TypeError, match="^Add_graph must be a Graph$"):
        s.add_graph(0, None)
    with pytest.raises(TypeError, match="^options must be a dictionary$"):
        s.add_graph(0, add_graph(), {"ge.exec.deviceId"})
    assert s.get_graph_ids() == []


def test_add_graph_failure_is_a_ge_error():
    s = Session()
    s.add_graph(2, add_graph())
    with pytest.raises(GeError, match=r"^AddGraph failed; graph_id=2; .*already in the session") as e:
        s.add_graph(2, add_graph())
    assert e.value.api_name == "AddGraph" and e.value.context == {"graph_id": 2}
    assert isinstance(e.value, ValueError)  # as ge-rs raised before


def test_remove_graph_failure_is_a_ge_error():
    s = Session()
    with pytest.raises(GeError, match=r"^RemoveGraph failed; graph_id=5; graph id 5 is not in the session$") as e:
        s.remove_graph(5)
    assert e.value.api_name == "RemoveGraph" and e.value.context == {"graph_id": 5}


# ---------------------------------------------------------------------------------------------
# run_graph
# ---------------------------------------------------------------------------------------------


def test_run_graph_with_tensors_and_arrays():
    s = Session()
    s.add_graph(1, add_graph())
    x = np.array([1, 2], np.float32)
    (a,) = s.run_graph(1, [Tensor(x), Tensor(x)])
    (b,) = s.run_graph(1, [x, x])  # ge-rs's extra
    assert isinstance(a, Tensor) and a.numpy().tolist() == b.numpy().tolist() == [2, 4]


@pytest.mark.parametrize("inputs", [(np.ones(2, np.float32),) * 2, np.ones((2, 2), np.float32), None, "x"])
def test_run_graph_inputs_must_be_a_list(inputs):
    s = Session()
    s.add_graph(1, add_graph())
    with pytest.raises(TypeError, match="^inputs must be a list of Tensor$"):
        s.run_graph(1, inputs)


@pytest.mark.parametrize("element", [0, 1.5, [1.0, 2.0], "x", None])
def test_run_graph_elements_must_be_tensors(element):
    s = Session()
    s.add_graph(1, add_graph())
    with pytest.raises(TypeError, match="^All elements in inputs must be the type of Tensor$"):
        s.run_graph(1, [np.ones(2, np.float32), element])


def test_run_graph_unknown_graph_is_a_ge_error():
    s = Session()
    with pytest.raises(GeError, match=r"^RunGraph failed; graph_id=2; graph id 2 is not in the session$") as e:
        s.run_graph(2, [])
    assert (e.value.api_name, e.value.context) == ("RunGraph", {"graph_id": 2})
    assert e.value.error_message == "graph id 2 is not in the session"


def test_inputs_that_do_not_fit_are_a_ge_error():
    s = Session()
    s.add_graph(3, add_graph())
    with pytest.raises(GeError, match=r"^RunGraph failed; graph_id=3; .*has 2 inputs, the run gave 1") as e:
        s.run_graph(3, [np.ones(2, np.float32)])
    assert isinstance(e.value, ValueError)


def test_a_kernel_failure_is_an_execution_error_and_a_ge_error():
    s = Session()
    s.add_graph(4, int_div_graph())
    with pytest.raises(GeError) as e:
        s.run_graph(4, [np.array([1, 2], np.int32), np.array([1, 0], np.int32)])
    err = e.value
    assert type(err) is ge.ExecutionError
    assert err.api_name == "RunGraph" and err.context == {"graph_id": 4}
    assert "node 'Div_0' (Div): integer division by zero" in err.error_message
    assert str(err) == "RunGraph failed; graph_id=4; " + err.error_message
    # The session stays usable.
    (out,) = s.run_graph(4, [np.array([6, 4], np.int32), np.array([3, 2], np.int32)])
    assert out.numpy().tolist() == [2, 2]


def test_a_compile_failure_is_a_ge_error_naming_the_node():
    b = GraphBuilder("g")
    x = b.create_input(0, data_type=F32, shape=[-1, -1])
    y = b.create_input(1, data_type=F32, shape=[-1, -1])
    s = Session()
    s.add_graph(8, b.build_and_reset([MatMulV2(x, y)]))
    with pytest.raises(GeError, match=r"^RunGraph failed; graph_id=8; shape inference for the given inputs failed: "
                                      r"MatMulV2 'MatMulV2_0'") as e:
        s.run_graph(8, [np.ones((2, 3), np.float32), np.ones((2, 3), np.float32)])
    # Our subclass of GE's GeError says which stage failed.
    assert type(e.value) is ge.ShapeInferenceError and e.value.context == {"graph_id": 8}


def test_run_graph_async_futures_carry_the_ge_error():
    s = Session()
    s.add_graph(4, int_div_graph())
    fut = s.run_graph_async(4, [np.array([1, 2], np.int32), np.array([1, 0], np.int32)])
    with pytest.raises(ge.ExecutionError) as e:
        fut.result(timeout=30)
    assert e.value.api_name == "RunGraph" and e.value.context == {"graph_id": 4}
    with pytest.raises(TypeError, match="^inputs must be a list of Tensor$"):
        s.run_graph_async(4, (np.ones(1, np.int32),))


def test_ge_programs_check_return_codes():
    # The shape of GE's example programs: ge_initialize, add_graph's return code, run, finalize.
    config = {"ge.exec.deviceId": "0", "ge.graphRunMode": "0"}
    assert GeApi().ge_initialize(config) == 0
    session = Session()
    ret = session.add_graph(1, add_graph())
    if ret != 0:  # pragma: no cover - the check GE's examples make
        pytest.fail(f"add_graph returned {ret}")
    outputs = session.run_graph(1, [Tensor(np.ones(2, np.float32)), Tensor(np.ones(2, np.float32))])
    assert outputs[0].numpy().tolist() == [2, 2]
    session.remove_graph(1)
    assert GeApi().ge_finalize() == 0
