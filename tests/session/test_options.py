"""Options as GE takes them (``GeApi.ge_initialize``, ``Session``, ``add_graph``): ge-rs's keys
interpreted, GE's other keys recorded and shown in the compile report, unknown keys warned about
with the closest known key, values strings."""

from __future__ import annotations

import logging
import warnings

import numpy as np
import pytest

import ge.error
from ge.es import GraphBuilder
from ge.es.all import Relu
from ge.ge_global import GeApi
from ge.graph import DataType, Graph
from ge.session import OPTION_KEYS, Session
from ge.session._option_keys import GE_OPTION_LEVELS

F32 = DataType.DT_FLOAT


def relu_graph() -> Graph:
    b = GraphBuilder("relu")
    x = b.create_input(0, data_type=F32, shape=[2])
    return b.build_and_reset([Relu(x)])


def run_once(s: Session, graph_id: int = 1) -> str:
    (out,) = s.run_graph(graph_id, [np.array([-1, 2], np.float32)])
    assert out.numpy().tolist() == [0, 2]
    report = s.compile_report(graph_id)
    assert report is not None
    return report


@pytest.fixture(autouse=True)
def _finalize():
    yield
    GeApi.ge_finalize()


# ---------------------------------------------------------------------------------------------
# The table
# ---------------------------------------------------------------------------------------------


def test_the_table_has_ge_keys_at_their_levels():
    # A few of GE's documented keys, and the levels GE's option checker lists them for.
    assert set("GSR") <= set(GE_OPTION_LEVELS["ge.graphRunMode"])
    assert set("GSR") <= set(GE_OPTION_LEVELS["ge.exec.deviceId"])
    assert set("GSR") <= set(GE_OPTION_LEVELS["ge.exec.rankTableFile"])
    assert set("GSR") <= set(GE_OPTION_LEVELS["ge.exec.rankId"])
    assert GE_OPTION_LEVELS["ge.exec.enableDump"] == "G"
    assert set("GSRB") <= set(GE_OPTION_LEVELS["ge.socVersion"])
    assert set("GSRB") <= set(GE_OPTION_LEVELS["ge.exec.precision_mode"])
    assert len(GE_OPTION_LEVELS) > 250
    assert all(set(levels) <= set("GSRB") for levels in GE_OPTION_LEVELS.values())
    # ge-rs's own keys: GE's ge.exec.deviceId and its collective keys (the timeout, the group
    # list, the rank table and rank id, docs/distributed.md) are GE's too, the others are ge-rs's.
    assert set(OPTION_KEYS) == {"ge.device", "ge.exec.deviceId", "ge.graphMode", "ge.graphCacheCapacity", "ge.threads",
                                "ge.memoryLimit", "ge.exec.hcclExecuteTimeOut", "ge.exec.hcomGrouplist",
                                "ge.exec.rankTableFile", "ge.exec.rankId"}
    assert [k for k in OPTION_KEYS if k in GE_OPTION_LEVELS] == [
        "ge.exec.deviceId", "ge.exec.hcclExecuteTimeOut", "ge.exec.hcomGrouplist", "ge.exec.rankTableFile",
        "ge.exec.rankId"]


# ---------------------------------------------------------------------------------------------
# ge-rs's keys are interpreted
# ---------------------------------------------------------------------------------------------


def test_our_keys_are_interpreted_at_every_level():
    s = Session({"ge.graphMode": "off", "ge.threads": "2", "ge.graphCacheCapacity": "3", "ge.exec.deviceId": "5",
                 "ge.memoryLimit": "1000000000"})
    assert s.options == {"ge.device": "cpu", "ge.exec.deviceId": 5, "ge.graphMode": "off",
                         "ge.graphCacheCapacity": 3, "ge.threads": 2, "ge.memoryLimit": 1000000000}
    s.add_graph(1, relu_graph(), {"ge.graphMode": "on"})
    s.add_graph(2, relu_graph())
    run_once(s, 1)
    run_once(s, 2)
    assert s.graph_cache_stats(1)["captures"] == 1  # graph mode, from the graph's options
    assert s.graph_cache_stats(2)["captures"] == 0  # eager, from the session's
    assert GeApi.ge_initialize({"ge.graphMode": "off", "ge.graphCacheCapacity": "4"}) == 0
    assert Session().options["ge.graphMode"] == "off"
    assert Session({"ge.graphMode": "on"}).options["ge.graphMode"] == "on"  # session over global
    assert Session().options["ge.graphCacheCapacity"] == 4
    GeApi.ge_finalize()
    assert Session().options["ge.graphCacheCapacity"] == 12


def test_ours_are_not_listed_as_recorded():
    s = Session({"ge.threads": "1", "ge.exec.deviceId": "0"})
    s.add_graph(1, relu_graph())
    report = run_once(s)
    assert "recorded" not in report and "ignored" not in report


@pytest.mark.parametrize("make", [
    lambda: Session({"ge.threads": "0"}),
    lambda: Session().add_graph(1, relu_graph(), {"ge.graphCacheCapacity": "none"}),
    lambda: GeApi.ge_initialize({"ge.device": "gpu"}),
])
def test_a_bad_value_of_ours_is_a_value_error_and_a_ge_error(make):
    with pytest.raises(ValueError) as e:
        make()
    assert isinstance(e.value, ge.error.GeError)
    assert e.value.api_name in ("CreateSession", "AddGraph", "GEInitialize")
    assert str(e.value).startswith(f"{e.value.api_name} failed; ")


# ---------------------------------------------------------------------------------------------
# GE's keys are accepted and recorded
# ---------------------------------------------------------------------------------------------


def test_every_ge_key_is_accepted_without_a_warning_at_every_level(tmp_path):
    every = {k: "0" for k in GE_OPTION_LEVELS}
    # Interpreted: a rank table must be a readable file listing the world (one rank here).
    table = tmp_path / "rank_table.json"
    table.write_text('{"server_list": [{"device": [{"device_id": "0", "rank_id": "0"}]}]}')
    every["ge.exec.rankTableFile"] = str(table)
    every["ge.exec.hcomGrouplist"] = '[{"group_name": "opts_g0", "group_rank_list": [0]}]'
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert GeApi.ge_initialize(every) == 0
        s = Session(every)
        assert s.add_graph(1, relu_graph(), every) == 0
        report = run_once(s)
    recorded = next(line for line in report.splitlines() if line.startswith("GE options recorded"))
    for key in GE_OPTION_LEVELS:
        if key not in OPTION_KEYS:
            assert f" {key}=0" in recorded
    assert "ge.exec.deviceId" not in recorded  # interpreted: the ACL device number


def test_recorded_options_are_in_the_compile_report_graph_over_session_over_global():
    GeApi.ge_initialize({"ge.exec.deviceId": "0", "ge.graphRunMode": "0", "ge.exec.enableDump": "1"})
    s = Session({"ge.socVersion": "Ascend910B1", "ge.exec.precision_mode": "force_fp16"})
    s.add_graph(1, relu_graph(), {"ge.exec.precision_mode": "allow_fp32_to_fp16", "ge.exec.profilingMode": "3"})
    s.add_graph(2, relu_graph())
    assert s.compile_report(1) is None  # before the first run, as before
    assert ("GE options recorded, not interpreted by ge-rs: ge.exec.enableDump=1, "
            "ge.exec.precision_mode=allow_fp32_to_fp16, ge.exec.profilingMode=3, ge.graphRunMode=0, "
            "ge.socVersion=Ascend910B1") in run_once(s, 1).splitlines()
    assert ("GE options recorded, not interpreted by ge-rs: ge.exec.enableDump=1, "
            "ge.exec.precision_mode=force_fp16, ge.graphRunMode=0, ge.socVersion=Ascend910B1"
            ) in run_once(s, 2).splitlines()
    # A session made after ge_finalize starts from nothing.
    GeApi.ge_finalize()
    s2 = Session()
    s2.add_graph(1, relu_graph())
    assert "recorded" not in run_once(s2)


def test_recorded_options_are_logged_at_debug_level(caplog):
    with caplog.at_level(logging.DEBUG, logger="ge.session"):
        Session({"ge.socVersion": "Ascend910B1"})
        Session({"ge.exec.enableDump": "1"})
    msgs = [r.getMessage() for r in caplog.records if r.name == "ge.session" and r.levelno == logging.DEBUG]
    assert any("ge.socVersion='Ascend910B1' recorded" in m and "GE lists it for: global, session, graph" in m
               for m in msgs)
    # GE lists ge.exec.enableDump for GEInitialize only; the log says so.
    assert any("session option ge.exec.enableDump='1' recorded" in m and "GE lists it for: global)" in m
               for m in msgs)


# ---------------------------------------------------------------------------------------------
# Unknown keys: accepted, warned about with the closest known key
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize("typo, closest", [
    ("ge.grapMode", "ge.graphMode"),          # ours
    ("ge.graphmode", "ge.graphMode"),         # case
    ("ge.exec.deviceid", "ge.exec.deviceId"),
    ("ge.exec.enableDumpp", "ge.exec.enableDump"),  # GE's
    ("ge.socversion", "ge.socVersion"),
    ("ge.graphRunMod", "ge.graphRunMode"),
])
def test_an_unknown_key_warns_with_the_closest_known_key(typo, closest):
    with pytest.warns(UserWarning, match=rf"unknown option '{typo}' ignored: neither ge-rs nor GE has it; "
                                          rf"did you mean '{closest}'\?") as w:
        s = Session({typo: "1"})
    assert w[0].filename == __file__  # points at the user's line
    s.add_graph(1, relu_graph())
    assert "unknown options ignored: " + typo + "=1" in run_once(s)


def test_unknown_keys_warn_at_every_level_and_the_program_runs():
    with pytest.warns(UserWarning, match="'my.own.key' ignored: neither ge-rs nor GE has it$") as w:
        assert GeApi.ge_initialize({"my.own.key": "x"}) == 0
    assert w[0].filename == __file__
    with pytest.warns(UserWarning, match="did you mean 'ge.threads'") as w:
        s = Session()
        assert s.add_graph(1, relu_graph(), {"ge.thread": "2"}) == 0
    assert w[0].filename == __file__
    report = run_once(s)
    assert "unknown options ignored: ge.thread=2, my.own.key=x" in report.splitlines()


def test_an_unknown_key_does_not_change_the_run():
    with pytest.warns(UserWarning):
        s = Session({"ge.graphMod": "off"})
    assert s.options["ge.graphMode"] == "on"  # the typo was not taken for ge.graphMode


# ---------------------------------------------------------------------------------------------
# Values are strings, as in GE
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize("value", [0, 1.5, True, None, b"0", ["0"]])
def test_values_must_be_strings(value):
    kind = type(value).__name__
    msg = rf"option 'ge.exec.deviceId' must have a str value \(GE passes options as strings\), got {kind}"
    with pytest.raises(TypeError, match=msg):
        Session({"ge.exec.deviceId": value})
    with pytest.raises(TypeError, match=msg):
        Session().add_graph(1, relu_graph(), {"ge.exec.deviceId": value})
    with pytest.raises(TypeError, match=msg):
        GeApi.ge_initialize({"ge.exec.deviceId": value})


def test_names_must_be_strings():
    with pytest.raises(TypeError, match="option names must be str, got int 1"):
        Session({1: "0"})
    with pytest.raises(TypeError, match="option names must be str, got bytes"):
        GeApi.ge_initialize({b"ge.graphRunMode": "0"})
    with pytest.raises(TypeError, match="option names must be str"):
        Session().add_graph(1, relu_graph(), {("ge.threads",): "1"})


def test_a_failed_ge_initialize_sets_nothing():
    with pytest.raises(ValueError):
        GeApi.ge_initialize({"ge.graphMode": "off", "ge.threads": "-3"})
    assert Session().options["ge.graphMode"] == "on"
