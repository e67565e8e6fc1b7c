"""GE's graph API: ``Graph``, ``Node``, ``Operator``, ``Tensor``, ``TensorDesc``, ``Shape``, and the types."""

from ge._native import Node
from ge.graph.graph import Graph
from ge.graph.operator import Operator
from ge.graph.tensor import Tensor
from ge.graph.tensor_desc import Shape, TensorDesc
from ge.graph.types import AttrValueType, DataType, DumpFormat, Format, Placement


__all__ = ["Graph", "Node", "Operator", "DataType", "Format", "Placement", "Shape", "Tensor", "TensorDesc",
           "DumpFormat", "AttrValueType"]
