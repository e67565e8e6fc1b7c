"""``ge.onnx_plugin``: ONNX Plugins written in Python, with GE's API.

A plugin maps ONNX nodes of one op type (``source``) in one ``domain`` and some ``opsets`` to a
GE operator (``target``); its ``parse_node(node, target)`` callback reads the ``OnnxNode`` view
and sets the target operator's attributes (``target.set_attr``) and dynamic port counts
(``target.register_dynamic_input/output``)::

    from ge.onnx_plugin import onnx_plugin

    plugin = onnx_plugin(source="MyElu", domain="my.domain", opsets=(1,), target="Elu")

    @plugin.parse_node
    def parse_my_elu(node, target):
        target.set_attr("alpha", node.attrs.get("alpha", 1.0))

Plugins are found on ``ASCEND_CUSTOM_OPP_PATH`` (files and directories, ``os.pathsep``-separated;
``bootstrap.load_onnx_plugins``) and feed ``ge.onnx.load``: a node whose
``domain::opset::op_type`` a plugin registers becomes a node of the plugin's target type, its
inputs and outputs mapped in order (``ge.onnx_plugin._bridge`` has the rules).
"""

from ._native import OnnxNode
from .plugin import OnnxPlugin, onnx_plugin

__all__ = ["OnnxNode", "OnnxPlugin", "onnx_plugin"]
