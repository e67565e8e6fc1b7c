"""An ONNX Plugin: nodes ``ScaledElu`` of the domain ``example.domain`` (opset 1) become GE ``Elu``
nodes; the node's ``gain`` attribute becomes Elu's ``alpha``, and ``scale`` its ``scale``."""

from ge.onnx_plugin import onnx_plugin

plugin = onnx_plugin(source="ScaledElu", domain="example.domain", opsets=(1,), target="Elu")


@plugin.parse_node
def parse_scaled_elu(node, target):
    target.set_attr("alpha", node.attrs.get("gain", 1.0))
    target.set_attr("scale", node.attrs.get("scale", 1.0))
