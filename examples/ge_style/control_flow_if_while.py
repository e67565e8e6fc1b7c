"""Control flow with subgraphs: ``If(cond, inputs, output_num, then_branch, else_branch)`` and
``While(inputs, output_num, cond, body)``.

Subgraphs are built with their own ``GraphBuilder`` and passed positionally, as GE's ES functions
take them. The If graph computes ``x * 3`` or ``x - 10`` depending on an int32 scalar fed at run
time (both branches run, one per session run); the While graph doubles ``acc`` and counts ``i``
up while ``i < limit``.

    python examples/ge_style/control_flow_if_while.py
"""

import numpy as np
from common import Checker, float_tensor, run_graph
from ge.es.all import If, Less, While
from ge.es.graph_builder import GraphBuilder
from ge.graph import Tensor
from ge.graph.types import DataType, Format


def branch(name: str, scale: float, shift: float):
    builder = GraphBuilder(name)
    x = builder.create_input(index=0, name="x", data_type=DataType.DT_FLOAT, shape=[3])
    builder.set_graph_output(x * scale + shift, 0)
    return builder.build_and_reset()


def build_if_graph():
    builder = GraphBuilder("IfGraph")
    x = builder.create_input(index=0, name="x", data_type=DataType.DT_FLOAT, shape=[3])
    cond = builder.create_input(index=1, name="cond", data_type=DataType.DT_INT32, shape=[])
    (y,) = If(cond, [x], 1, branch("times_three", 3.0, 0.0), branch("minus_ten", 1.0, -10.0))
    builder.set_graph_output(y, 0)
    return builder.build_and_reset()


def loop_inputs(builder: GraphBuilder):
    """The loop-carried values (counter, accumulator, limit), declared as GE's samples declare inputs."""
    return [
        builder.create_input(index=0, name="i", data_type=DataType.DT_INT32, shape=[]),
        builder.create_input(index=1, name="acc", data_type=DataType.DT_FLOAT, shape=[2]),
        builder.create_input(index=2, name="limit", data_type=DataType.DT_INT32, shape=[]),
    ]


def build_while_graph():
    cond_builder = GraphBuilder("cond")
    i, _acc, limit = loop_inputs(cond_builder)
    cond_builder.set_graph_output(Less(i, limit), 0)
    cond = cond_builder.build_and_reset()

    body_builder = GraphBuilder("body")
    i, acc, limit = loop_inputs(body_builder)
    # An int32 one: a bare 1 is an int64 constant (as in GE) and would promote the counter to int64.
    body_builder.set_graph_output(i + body_builder.create_scalar_int32(1), 0)
    body_builder.set_graph_output(acc * 2.0, 1)
    body_builder.set_graph_output(limit, 2)
    body = body_builder.build_and_reset()

    builder = GraphBuilder("WhileGraph")
    i_out, acc_out, _ = While(loop_inputs(builder), 3, cond, body)
    builder.set_graph_output(i_out, 0)
    builder.set_graph_output(acc_out, 1)
    return builder.build_and_reset()


def int_scalar(value: int) -> Tensor:
    return Tensor([value], None, DataType.DT_INT32, Format.FORMAT_ND, [])


def main() -> None:
    check = Checker()
    x = np.array([1.0, -2.5, 4.0], np.float32)
    if_graph = build_if_graph()
    for graph_id, (cond, want) in enumerate([(1, x * 3), (0, x - 10)], start=1):
        outputs = run_graph(if_graph, [float_tensor(x), int_scalar(cond)], graph_id=graph_id)
        if outputs is None:
            check.true(f"If cond={cond}", False)
        else:
            check.close(f"If cond={cond}", outputs[0], want)

    acc = np.array([0.75, -1.0], np.float32)
    outputs = run_graph(build_while_graph(), [int_scalar(0), float_tensor(acc), int_scalar(5)], graph_id=3)
    if outputs is None:
        check.true("While", False)
    else:
        check.close("While i", outputs[0], np.array(5, np.int32), dtype=DataType.DT_INT32)
        check.close("While acc", outputs[1], acc * 2**5)
    check.finish()


if __name__ == "__main__":
    main()
