"""The IR kinds of a custom operator's inputs, outputs and attributes (GE's identifiers)."""

from enum import IntEnum


class InputType(IntEnum):
    REQUIRED = 0
    OPTIONAL = 1
    DYNAMIC = 2


class OutputType(IntEnum):
    REQUIRED = 0
    DYNAMIC = 1


class AttrType:
    """GE's attribute value-type names (``VT_*``)."""

    INT = "VT_INT"
    FLOAT = "VT_FLOAT"
    BOOL = "VT_BOOL"
    STRING = "VT_STRING"
    DATA_TYPE = "VT_DATA_TYPE"
    TENSOR = "VT_TENSOR"
    LIST_INT = "VT_LIST_INT"
    LIST_FLOAT = "VT_LIST_FLOAT"
    LIST_BOOL = "VT_LIST_BOOL"
    LIST_STRING = "VT_LIST_STRING"
    LIST_DATA_TYPE = "VT_LIST_DATA_TYPE"
    LIST_LIST_INT = "VT_LIST_LIST_INT"


# GE's VT_* names <-> the attribute types of our operator library (operators.json).
VT_TO_LIBRARY = {
    AttrType.INT: "Int", AttrType.FLOAT: "Float", AttrType.BOOL: "Bool",
    AttrType.STRING: "String", AttrType.DATA_TYPE: "Type", AttrType.TENSOR: "Tensor",
    AttrType.LIST_INT: "ListInt", AttrType.LIST_FLOAT: "ListFloat",
    AttrType.LIST_BOOL: "ListBool", AttrType.LIST_STRING: "ListString",
    AttrType.LIST_DATA_TYPE: "ListType", AttrType.LIST_LIST_INT: "ListListInt",
}
LIBRARY_TO_VT = {v: k for k, v in VT_TO_LIBRARY.items()}
