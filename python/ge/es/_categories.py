"""The category of each built-in operator: which ``ge.es.<category>`` module exposes it.

In GE the categories are separately installed ES packages (``es_math``, ``es_nn``, ``es_cv``,
``es_transformer``, ...), each generated from the prototypes of one CANN operator repository
(ops-math, ops-nn, ops-cv, ops-transformer; the package name is that repository's ``PKG_NAME``)
and mounted as ``ge.es.<name>`` through the ``ge.es.plugins`` entry points. ge-rs ships its
operators in one library, so this table says where each one lives in CANN.

How it was derived (snapshots of hicann/ops-math, hicann/ops-nn, hicann/ops-cv and
hicann/ops-transformer, 2025-11 to 2026-08): an operator belongs to the repository holding its
``REG_OP`` in ``<group>/<op>/op_graph/*_proto.h`` (its own directory; ``experimental/`` counts
when it is the only one); failing that, to the repository whose
``common/inc/op_graph/op_<pkg>_proto_extend.h`` declares it (marked "extend header" below).
No operator has its own directory in two repositories. Resize is declared in both the nn and the
cv extend headers and goes to cv, where the resize family (ResizeNearestNeighborV2, ...) has its
directories.
Operators those repositories no longer register at all (the ``...D`` variants with constant
inputs as attributes, legacy ops) follow the operator they are a variant of (marked "variant
of" below).
MoeGatingTopKSoftmax, PromptFlashAttention, IncreFlashAttention, FusedInferAttentionScore and
GroupedMatmulFinalizeRouting come from ops-transformer (``moe/``, ``attention/``, ``gmm/``),
hence ``ge.es.transformer``.

The graph's own source operators (Data, RefData, Const, Variable) belong to no operator
repository (GE's builder makes them: ``create_input``, ``create_const``, ``create_variable``);
they are in ``ge.es.all`` only, as are the HCCL collectives (``Hcom*``), which the HCCL package
registers, not an operator repository.

Values are the module names under ``ge.es.ops``. tests/test_ge_surface.py checks that every
operator of ``ge.es.all`` has exactly one entry here or is one of the source, HCCL or other
operators (the tuples below).
"""

import importlib
import sys
from typing import Any, Callable, Dict, List, Tuple

# Operators of ge.es.all that no category module exposes.
SOURCE_OPS: Tuple[str, ...] = ("Data", "RefData", "Const", "Variable")

# Operators of ge.es.all that belong to no CANN operator repository: the HCCL collectives are
# registered by the HCCL package (GE's examples import them from ge.es.all).
HCCL_OPS: Tuple[str, ...] = (
    "HcomAllGather", "HcomAllReduce", "HcomBroadcast", "HcomReduceScatter", "HcomAllToAllV", "HcomSend",
    "HcomReceive",
)

# Operators of ge.es.all outside the four operator repositories: GE's string operators (AI CPU
# kernels from TensorFlow, in none of ops-math/nn/cv/transformer) and the ge-rs operators with
# ONNX's semantics where GE has none (StringNormalizer, StringSplitPadded, LabelEncoder).
OTHER_OPS: Tuple[str, ...] = (
    "StringJoin", "StaticRegexFullMatch", "RegexFullMatch", "AsString", "StringToNumber",
    "StringNormalizer", "StringSplitPadded", "LabelEncoder",
    # The ge-rs tree ensembles (ai.onnx.ml's TreeEnsemble*, which GE has none of).
    "TreeEnsemble", "TreeEnsembleClassifier",
    # TensorFlow's list and optional ops as GE names them (AI CPU kernels) and the ge-rs list ops
    # with ONNX's semantics.
    "EmptyTensorList", "TensorListPushBack", "TensorListPopBack", "TensorListLength", "TensorListGetItem",
    "OptionalFromValue", "OptionalNone", "OptionalHasValue", "OptionalGetValue",
    "SequenceInsert", "SequenceErase", "SplitToSequence", "ConcatFromSequence",
    # The ge-rs image decoder with ONNX's semantics (GE's DecodeImage reads DT_STRING contents).
    "ImageDecoder",
)

# category -> {operator: module under ge.es.ops}
CATEGORY_OPS: Dict[str, Dict[str, str]] = {
    "math": {
        "Abs": "abs",
        "Acos": "acos",
        "Acosh": "acosh",
        "Add": "add",
        "Addcmul": "addcmul",
        "ArgMaxD": "arg_max_d",  # variant of ArgMaxV2
        "ArgMaxV2": "arg_max_v2",
        "ArgMin": "arg_min",
        "Asin": "asin",
        "Asinh": "asinh",
        "Atan": "atan",
        "Atan2": "atan2",
        "Atanh": "atanh",
        "BiasAdd": "bias_add",
        "Bitcast": "bitcast",  # extend header
        "BitwiseAnd": "bitwise_and",
        "BitwiseOr": "bitwise_or",
        "BitwiseXor": "bitwise_xor",
        "BroadcastTo": "broadcast_to",
        "Cast": "cast",
        "Ceil": "ceil",
        "ClipByValue": "clip_by_value",
        "Concat": "concat",
        "ConcatD": "concat_d",
        "ConcatV2": "concat_v2",
        "Cos": "cos",
        "Cosh": "cosh",
        "Cumprod": "cumprod",  # extend header
        "Cumsum": "cumsum",
        "CumsumD": "cumsum_d",  # variant of Cumsum
        "DepthToSpace": "depth_to_space",
        "Div": "div",
        "DivNoNan": "div_no_nan",
        "Equal": "equal",
        "Erf": "erf",
        "Exp": "exp",
        "Expand": "expand",
        "ExpandD": "expand_d",  # variant of Expand
        "Expm1": "expm1",
        "Fill": "fill",
        "Fills": "fills",
        "Flatten": "flatten",  # extend header
        "FlattenV2": "flatten_v2",  # variant of Flatten
        "Floor": "floor",
        "FloorDiv": "floor_div",
        "FloorMod": "floor_mod",
        "FusedMulAdd": "fused_mul_add",
        "GlobalAveragePool": "global_average_pool",
        "Greater": "greater",
        "GreaterEqual": "greater_equal",
        "Identity": "identity",
        "IdentityN": "identity_n",
        "Invert": "invert",
        "IsInf": "is_inf",
        "IsNan": "is_nan",
        "LeftShift": "left_shift",  # extend header
        "Less": "less",
        "LessEqual": "less_equal",
        "Log": "log",
        "Log1p": "log1p",
        "LogicalAnd": "logical_and",
        "LogicalNot": "logical_not",
        "LogicalOr": "logical_or",
        "MaskedFill": "masked_fill",
        "MatrixDeterminant": "matrix_determinant",  # variant of LogMatrixDeterminant (ops-math)
        "Maximum": "maximum",
        "Minimum": "minimum",
        "Mod": "mod",
        "Mul": "mul",
        "Neg": "neg",
        "NotEqual": "not_equal",
        "OneHot": "one_hot",
        "OneHotD": "one_hot_d",  # extend header
        "Pack": "pack",
        "Pad": "pad",
        "PadD": "pad_d",  # variant of Pad
        "PadV3": "pad_v3",
        "Pow": "pow",
        "RandomUniform": "random_uniform",  # extend header
        "Range": "range",
        "Rank": "rank",
        "RealDiv": "real_div",
        "Reciprocal": "reciprocal",
        "ReduceAll": "reduce_all",
        "ReduceAny": "reduce_any",
        "ReduceLogSumExp": "reduce_log_sum_exp",
        "ReduceMax": "reduce_max",
        "ReduceMaxD": "reduce_max_d",  # variant of ReduceMax
        "ReduceMean": "reduce_mean",
        "ReduceMeanD": "reduce_mean_d",  # variant of ReduceMean
        "ReduceMin": "reduce_min",
        "ReduceMinD": "reduce_min_d",  # variant of ReduceMin
        "ReduceProd": "reduce_prod",
        "ReduceProdD": "reduce_prod_d",  # variant of ReduceProd
        "ReduceSum": "reduce_sum",
        "ReduceSumD": "reduce_sum_d",  # variant of ReduceSum
        "Reshape": "reshape",
        "RightShift": "right_shift",
        "Round": "round",
        "Rsqrt": "rsqrt",
        "Select": "select",
        "SelectV2": "select_v2",
        "Shape": "shape",
        "Sign": "sign",
        "Sin": "sin",
        "Sinh": "sinh",
        "Slice": "slice",
        "SliceD": "slice_d",  # variant of Slice
        "SpaceToDepth": "space_to_depth",
        "Split": "split",
        "SplitD": "split_d",
        "SplitV": "split_v",
        "Sqrt": "sqrt",
        "Square": "square",
        "SquaredDifference": "squared_difference",
        "Squeeze": "squeeze",
        "StridedSlice": "strided_slice",
        "StridedSliceD": "strided_slice_d",  # variant of StridedSlice
        "StridedSliceV2": "strided_slice_v2",
        "Sub": "sub",
        "Tan": "tan",
        "Tanh": "tanh",
        "TensorMove": "tensor_move",
        "Tile": "tile",
        "TopKV2": "top_kv2",
        "Transpose": "transpose",
        "Tril": "tril",
        "Trilu": "trilu",  # extend header
        "Triu": "triu",
        "Unpack": "unpack",
        "Unsqueeze": "unsqueeze",
        "ZerosLike": "zeros_like",
    },
    "nn": {
        "AddRmsNorm": "add_rms_norm",
        "AvgPool": "avg_pool",
        "AvgPoolV2": "avg_pool_v2",
        "BatchMatMul": "batch_mat_mul",  # extend header
        "BatchMatMulV2": "batch_mat_mul_v2",  # extend header
        "BatchNorm": "batch_norm",
        "Case": "case",  # control flow, like If
        "Conv2D": "conv2_d",  # extend header
        "Conv2DTranspose": "conv2_d_transpose",  # extend header
        "Conv3D": "conv3_d",  # extend header
        "DeformableConv2D": "deformable_conv2_d",  # extend header
        "DepthwiseConv2D": "depthwise_conv2_d",  # variant of Conv2D (ops-nn conv/)
        "DynamicQuant": "dynamic_quant",
        "Einsum": "einsum",  # extend header
        "Elu": "elu",
        "EmbeddingBag": "embedding_bag",
        "GEMM": "gemm",  # extend header
        "GatherElements": "gather_elements",
        "GatherNd": "gather_nd",
        "GatherV2": "gather_v2",
        "GatherV2D": "gather_v2_d",  # variant of GatherV2
        "Gelu": "gelu",
        "GeluV2": "gelu_v2",
        "GroupNorm": "group_norm",
        "HardSigmoid": "hard_sigmoid",
        "If": "if_",  # extend header
        "InstanceNorm": "instance_norm",
        "LRN": "lrn",  # extend header
        "LayerNorm": "layer_norm",
        "LeakyRelu": "leaky_relu",
        "LogSoftmaxV2": "log_softmax_v2",
        "MatMul": "mat_mul",  # variant of MatMulV2/MatMulV3 (ops-nn matmul/)
        "MatMulV2": "mat_mul_v2",  # extend header
        "MaxPool": "max_pool",
        "MaxPoolV3": "max_pool_v3",
        "Mish": "mish",
        "NonZero": "non_zero",
        "PRelu": "p_relu",
        "Pooling": "pooling",  # variant of AvgPool/MaxPool (ops-nn pooling/)
        "Relu": "relu",
        "Relu6": "relu6",
        "ReverseV2": "reverse_v2",
        "RmsNorm": "rms_norm",
        "ScatterElements": "scatter_elements",
        "ScatterNd": "scatter_nd",
        "ScatterNdUpdate": "scatter_nd_update",
        "Selu": "selu",
        "Sigmoid": "sigmoid",
        "Size": "size",  # extend header
        "SoftmaxV2": "softmax_v2",
        "Softplus": "softplus",
        "Softsign": "softsign",
        "Swish": "swish",
        "Threshold": "threshold",
        "UniqueWithCountsAndSorting": "unique_with_counts_and_sorting",  # extend header
        "Where": "where",
        "While": "while_",  # control flow, like If
    },
    "cv": {
        "GridSampler2D": "grid_sampler2_d",
        "GridSampler3D": "grid_sampler3_d",  # variant of GridSampler2D (ops-cv image/)
        "NonMaxSuppressionV6": "non_max_suppression_v6",
        "ROIAlign": "roi_align",
        "Resize": "resize",  # nn and cv extend headers
        "ResizeBilinearV2": "resize_bilinear_v2",
        "ResizeNearestNeighborV2": "resize_nearest_neighbor_v2",
    },
    "transformer": {
        "FusedInferAttentionScore": "fused_infer_attention_score",
        "GroupedMatmulFinalizeRouting": "grouped_matmul_finalize_routing",
        "IncreFlashAttention": "incre_flash_attention",
        "MoeGatingTopKSoftmax": "moe_gating_top_k_softmax",
        "PromptFlashAttention": "prompt_flash_attention",
    },
}

CATEGORIES: Tuple[str, ...] = tuple(CATEGORY_OPS)



def _category_getattr(namespace: Dict[str, Any], category: str, name: str) -> Any:
    """A category module's ``__getattr__``: imports the operator's module on first use (an op
    function or its ``<Op>Output`` type) and keeps the value in ``namespace``. ``__all__``
    (what ``from ge.es.<category> import *`` reads) imports them all."""
    ops = CATEGORY_OPS[category]
    if name == "__all__":
        names: List[str] = []
        for op in ops:
            names.append(op)
            if _category_getattr(namespace, category, op) is not None and f"{op}Output" in namespace:
                names.append(f"{op}Output")
        namespace["__all__"] = names
        return names
    op = name[: -len("Output")] if name.endswith("Output") and name not in ops else name
    if op not in ops:
        raise AttributeError(f"module 'ge.es.{category}' has no attribute '{name}'")
    module = importlib.import_module(f"ge.es.ops.{ops[op]}")
    output = getattr(module, f"{op}Output", None)
    if output is not None:
        namespace[f"{op}Output"] = output
    namespace[op] = getattr(module, op)
    if name not in namespace:
        raise AttributeError(f"module 'ge.es.{category}' has no attribute '{name}'")
    return namespace[name]


def _category_dir(namespace: Dict[str, Any], category: str) -> List[str]:
    """A category module's ``__dir__``: its operators and what is loaded."""
    return sorted(set(namespace) | set(CATEGORY_OPS[category]))


def _module_hooks(category: str) -> Tuple[Callable[[str], Any], Callable[[], List[str]]]:
    """The ``__getattr__`` and ``__dir__`` of the module ``ge.es.<category>`` (being imported)."""
    namespace = sys.modules[f"ge.es.{category}"].__dict__

    def __getattr__(name: str) -> Any:
        return _category_getattr(namespace, category, name)

    def __dir__() -> List[str]:
        return _category_dir(namespace, category)

    return __getattr__, __dir__
