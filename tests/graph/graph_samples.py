"""Small graphs the graph-API tests share (tests/graph/test_*.py)."""

from ge.es import GraphBuilder
from ge.es.all import If, Relu
from ge.graph import DataType


def branch(name, fn):
    """A one-input graph ``fn(input_0)`` built with its own builder."""
    b = GraphBuilder(name)
    x = b.create_input(0, shape=[2])
    return b.build_and_reset([fn(x)])


def if_graph():
    """main: If(cond, [x]) with then = Relu, else = x + 1, followed by a Relu."""
    b = GraphBuilder("main")
    c = b.create_input(0, data_type=DataType.DT_BOOL, shape=[])
    x = b.create_input(1, shape=[2])
    (out,) = If(c, [x], output_num=1, then_branch=branch("then", Relu),
                else_branch=branch("else", lambda t: t + 1.0))
    return b.build_and_reset([Relu(out)])
