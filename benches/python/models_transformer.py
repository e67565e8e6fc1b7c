"""Transformer models for bench_models.py, built with ``onnx.helper`` and seeded random weights.

Three architectures, each a function of its sizes (so that the tests can build them tiny):

  * ``bert``: an encoder in BERT's structure. Inputs ``input_ids``, ``attention_mask`` and
    ``token_type_ids`` (int64, [batch, seq]); word embeddings (Gather) + learned position
    embeddings (Gather of a constant position range) + token-type embeddings (Gather; the inputs
    have two segments), LayerNormalization; post-LN layers of multi-head
    self-attention (MatMul + Add projections, Reshape/Transpose to heads, MatMul, scaling, the
    additive mask ``(1 - mask) * -10000`` broadcast over heads and queries, Softmax, MatMul,
    Transpose/Reshape back, output projection, residual, LayerNormalization) and a feed-forward
    block with the exact Gelu written as BERT's exporters write it: ``x * 0.5 * (1 + Erf(x /
    sqrt 2))``. Outputs: the last hidden state and the pooler (first token, MatMul + Tanh).
  * ``gpt``: a decoder in GPT-2's structure. Input ``input_ids``; token + position embeddings;
    pre-LN blocks whose attention masks the future with a causal mask (``Trilu`` of a ones matrix,
    Cast to bool, ``Where(mask, scores, -1e9)``) and whose MLP uses GPT-2's tanh Gelu
    (``0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3)))``, with Pow); a final LayerNormalization and
    a tied LM head: the token-embedding table, transposed (a Transpose node on the same
    initializer), as the output projection. Output: logits [batch, seq, vocab].
  * ``vit``: a Vision Transformer. Input ``pixel_values`` [batch, 3, image, image]; the patch
    embedding is a Conv with kernel = stride = patch, flattened (Reshape) and transposed to tokens;
    a class token (an initializer, Expand to the batch) is Concat-ed in front, position embeddings
    added; pre-LN encoder blocks (Erf Gelu); a final LayerNormalization; the class token's state
    (Gather index 0 on the token axis) through a linear head. Output: logits [batch, classes].

Weights are normal with standard deviation 0.02 (BERT's initialiser), LayerNormalization scales
1 + N(0, 0.1) and biases N(0, 0.02); everything comes from ``numpy.random.default_rng(seed)``.
Shapes are static: Reshape targets use 0 (copy the dimension) and -1 like the usual exports.
"""

from __future__ import annotations

import math
from typing import Any, Dict, List, Optional, Tuple

import numpy as np

OPSET = 17

# Sizes of the benchmark (``full``) and of the ``--quick`` mode; the tests use smaller ones still.
SIZES: Dict[str, Dict[str, Dict[str, int]]] = {
    "bert": {
        "full": dict(vocab=8192, seq=128, d=256, heads=4, ffn=1024, layers=4, batch=1),
        "quick": dict(vocab=1024, seq=32, d=64, heads=2, ffn=256, layers=2, batch=1),
    },
    "gpt": {
        "full": dict(vocab=8192, seq=128, d=256, heads=4, ffn=1024, layers=4, batch=1),
        "quick": dict(vocab=1024, seq=32, d=64, heads=2, ffn=256, layers=2, batch=1),
    },
    "vit": {
        "full": dict(image=224, patch=16, d=192, heads=3, ffn=768, layers=6, classes=1000, batch=1),
        "quick": dict(image=64, patch=16, d=64, heads=2, ffn=256, layers=2, classes=100, batch=1),
    },
}


class _Builder:
    """Nodes and initializers of one graph, with fresh names and seeded weights."""

    def __init__(self, seed: int) -> None:
        self.rng = np.random.default_rng(seed)
        self.nodes: List[Any] = []
        self.inits: List[Any] = []
        self.count = 0

    def name(self, hint: str) -> str:
        self.count += 1
        return f"{hint}_{self.count}"

    def const(self, value: Any, hint: str = "c", dtype: Any = np.float32) -> str:
        from onnx import numpy_helper

        n = self.name(hint)
        self.inits.append(numpy_helper.from_array(np.asarray(value, dtype=dtype), n))
        return n

    def weight(self, shape: Tuple[int, ...], hint: str, std: float = 0.02, mean: float = 0.0) -> str:
        return self.const(mean + std * self.rng.standard_normal(shape), hint)

    def op(self, op_type: str, inputs: List[str], hint: Optional[str] = None, **attrs: Any) -> str:
        from onnx import helper

        out = self.name(hint or op_type.lower())
        self.nodes.append(helper.make_node(op_type, inputs, [out], name=out, **attrs))
        return out

    # -- layers ----------------------------------------------------------------------------------

    def linear(self, x: str, din: int, dout: int, hint: str) -> str:
        y = self.op("MatMul", [x, self.weight((din, dout), hint + "_w")], hint + "_mm")
        return self.op("Add", [y, self.weight((dout,), hint + "_b")], hint)

    def layer_norm(self, x: str, d: int, hint: str, eps: float = 1e-5) -> str:
        scale = self.weight((d,), hint + "_g", std=0.1, mean=1.0)
        return self.op("LayerNormalization", [x, scale, self.weight((d,), hint + "_b")], hint, axis=-1,
                       epsilon=eps)

    def gelu_erf(self, x: str) -> str:
        t = self.op("Div", [x, self.const(math.sqrt(2.0))])
        t = self.op("Add", [self.op("Erf", [t]), self.const(1.0)])
        return self.op("Mul", [self.op("Mul", [x, t]), self.const(0.5)], "gelu")

    def gelu_tanh(self, x: str) -> str:
        cube = self.op("Pow", [x, self.const(3.0)])
        inner = self.op("Add", [x, self.op("Mul", [cube, self.const(0.044715)])])
        t = self.op("Tanh", [self.op("Mul", [inner, self.const(math.sqrt(2.0 / math.pi))])])
        half = self.op("Mul", [x, self.const(0.5)])
        return self.op("Mul", [half, self.op("Add", [t, self.const(1.0)])], "gelu")

    def attention(self, x: str, d: int, heads: int, hint: str, mask_add: Optional[str] = None,
                  causal: Optional[str] = None) -> str:
        """Multi-head self-attention on x [b, s, d]: separate Q, K, V projections, heads split by
        Reshape [0, 0, h, dh] + Transpose, scores = Q K^T / sqrt(dh), then ``+ mask_add`` and/or
        ``Where(causal, scores, -1e9)``, Softmax on the last axis, weighted sum, heads merged, output
        projection."""
        dh = d // heads
        split = self.const([0, 0, heads, dh], "heads_shape", np.int64)
        q = self.op("Transpose", [self.op("Reshape", [self.linear(x, d, d, hint + "_q"), split])],
                    perm=[0, 2, 1, 3])
        k = self.op("Transpose", [self.op("Reshape", [self.linear(x, d, d, hint + "_k"), split])],
                    perm=[0, 2, 3, 1])
        v = self.op("Transpose", [self.op("Reshape", [self.linear(x, d, d, hint + "_v"), split])],
                    perm=[0, 2, 1, 3])
        scores = self.op("Div", [self.op("MatMul", [q, k], hint + "_qk"), self.const(math.sqrt(dh))])
        if mask_add is not None:
            scores = self.op("Add", [scores, mask_add])
        if causal is not None:
            scores = self.op("Where", [causal, scores, self.const(-1e9)])
        probs = self.op("Softmax", [scores], hint + "_softmax", axis=-1)
        ctx = self.op("Transpose", [self.op("MatMul", [probs, v], hint + "_pv")], perm=[0, 2, 1, 3])
        ctx = self.op("Reshape", [ctx, self.const([0, 0, d], "merge_shape", np.int64)])
        return self.linear(ctx, d, d, hint + "_o")

    def model(self, name: str, inputs: List[Any], outputs: List[Any]) -> Any:
        from onnx import helper

        graph = helper.make_graph(self.nodes, name, inputs, outputs, self.inits)
        m = helper.make_model(graph, opset_imports=[helper.make_opsetid("", OPSET)],
                              producer_name="ge-rs benches/python/models_transformer.py")
        m.ir_version = 8
        return m


def _io(name: str, elem: Any, shape: List[int]) -> Any:
    from onnx import helper

    return helper.make_tensor_value_info(name, elem, shape)


def build_bert(vocab: int, seq: int, d: int, heads: int, ffn: int, layers: int, batch: int = 1,
               seed: int = 0) -> Tuple[Any, Dict[str, np.ndarray]]:
    """The BERT-structured encoder and its inputs (random token ids, two segments, the last quarter
    of the sequence masked out as padding)."""
    from onnx import TensorProto, helper

    b = _Builder(seed)
    words = b.op("Gather", [b.weight((vocab, d), "word_emb"), "input_ids"], "word_gather", axis=0)
    positions = b.const(np.arange(seq)[None, :], "position_ids", np.int64)
    pos = b.op("Gather", [b.weight((seq, d), "pos_emb"), positions], "pos_gather", axis=0)
    types = b.op("Gather", [b.weight((2, d), "type_emb"), "token_type_ids"], "type_gather", axis=0)
    x = b.op("Add", [b.op("Add", [words, pos]), types], "emb_sum")
    x = b.layer_norm(x, d, "emb_ln", eps=1e-12)
    mask = b.op("Unsqueeze", [b.op("Cast", ["attention_mask"], to=TensorProto.FLOAT),
                              b.const([1, 2], "axes", np.int64)])
    mask_add = b.op("Mul", [b.op("Sub", [b.const(1.0), mask]), b.const(-10000.0)], "mask_add")
    for i in range(layers):
        a = b.attention(x, d, heads, f"l{i}_att", mask_add=mask_add)
        x = b.layer_norm(b.op("Add", [a, x]), d, f"l{i}_ln1", eps=1e-12)
        h = b.linear(b.gelu_erf(b.linear(x, d, ffn, f"l{i}_ff1")), ffn, d, f"l{i}_ff2")
        x = b.layer_norm(b.op("Add", [h, x]), d, f"l{i}_ln2", eps=1e-12)
    b.nodes.append(helper.make_node("Identity", [x], ["last_hidden_state"]))
    first = b.op("Gather", [x, b.const(0, "first", np.int64)], "first_token", axis=1)
    pooled = b.op("Tanh", [b.linear(first, d, d, "pooler")])
    b.nodes.append(helper.make_node("Identity", [pooled], ["pooler_output"]))
    m = b.model("bert", [_io("input_ids", TensorProto.INT64, [batch, seq]),
                         _io("attention_mask", TensorProto.INT64, [batch, seq]),
                         _io("token_type_ids", TensorProto.INT64, [batch, seq])],
                [_io("last_hidden_state", TensorProto.FLOAT, [batch, seq, d]),
                 _io("pooler_output", TensorProto.FLOAT, [batch, d])])
    rng = np.random.default_rng(seed + 1)
    ids = rng.integers(0, vocab, (batch, seq), dtype=np.int64)
    attn = np.ones((batch, seq), np.int64)
    attn[:, seq - seq // 4:] = 0
    types = np.zeros((batch, seq), np.int64)
    types[:, seq // 2:] = 1  # a second segment, as for a sentence pair
    return m, {"input_ids": ids, "attention_mask": attn, "token_type_ids": types}


def build_gpt(vocab: int, seq: int, d: int, heads: int, ffn: int, layers: int, batch: int = 1,
              seed: int = 0) -> Tuple[Any, Dict[str, np.ndarray]]:
    """The GPT-2-structured decoder (causal mask, tied LM head) and its input."""
    from onnx import TensorProto, helper

    b = _Builder(seed)
    wte = b.weight((vocab, d), "tok_emb")
    tok = b.op("Gather", [wte, "input_ids"], "tok_gather", axis=0)
    positions = b.const(np.arange(seq)[None, :], "position_ids", np.int64)
    x = b.op("Add", [tok, b.op("Gather", [b.weight((seq, d), "pos_emb"), positions], "pos_gather", axis=0)])
    lower = b.op("Trilu", [b.const(np.ones((seq, seq)), "ones")], "causal_tril", upper=0)
    causal = b.op("Cast", [lower], "causal_mask", to=TensorProto.BOOL)
    for i in range(layers):
        x = b.op("Add", [x, b.attention(b.layer_norm(x, d, f"l{i}_ln1"), d, heads, f"l{i}_att",
                                        causal=causal)])
        h = b.linear(b.gelu_tanh(b.linear(b.layer_norm(x, d, f"l{i}_ln2"), d, ffn, f"l{i}_fc")), ffn, d,
                     f"l{i}_proj")
        x = b.op("Add", [x, h])
    x = b.layer_norm(x, d, "ln_f")
    head = b.op("Transpose", [wte], "lm_head_w", perm=[1, 0])  # tied: the embedding table itself
    b.nodes.append(helper.make_node("MatMul", [x, head], ["logits"], name="lm_head"))
    m = b.model("gpt", [_io("input_ids", TensorProto.INT64, [batch, seq])],
                [_io("logits", TensorProto.FLOAT, [batch, seq, vocab])])
    ids = np.random.default_rng(seed + 1).integers(0, vocab, (batch, seq), dtype=np.int64)
    return m, {"input_ids": ids}


def build_vit(image: int, patch: int, d: int, heads: int, ffn: int, layers: int, classes: int,
              batch: int = 1, seed: int = 0) -> Tuple[Any, Dict[str, np.ndarray]]:
    """The Vision Transformer and its input (a standard-normal image)."""
    from onnx import TensorProto, helper

    b = _Builder(seed)
    tokens = (image // patch) ** 2
    fan_in = 3 * patch * patch
    w = b.weight((d, 3, patch, patch), "patch_w", std=math.sqrt(1.0 / fan_in))
    x = b.op("Conv", ["pixel_values", w, b.weight((d,), "patch_b")], "patch_embed",
             kernel_shape=[patch, patch], strides=[patch, patch])
    x = b.op("Reshape", [x, b.const([0, d, -1], "flat_shape", np.int64)])
    x = b.op("Transpose", [x], perm=[0, 2, 1])
    cls = b.op("Expand", [b.weight((1, 1, d), "cls_token"), b.const([batch, 1, d], "cls_shape", np.int64)])
    x = b.op("Concat", [cls, x], "with_cls", axis=1)
    x = b.op("Add", [x, b.weight((1, tokens + 1, d), "pos_emb")])
    for i in range(layers):
        x = b.op("Add", [x, b.attention(b.layer_norm(x, d, f"l{i}_ln1", eps=1e-6), d, heads, f"l{i}_att")])
        h = b.linear(b.gelu_erf(b.linear(b.layer_norm(x, d, f"l{i}_ln2", eps=1e-6), d, ffn, f"l{i}_fc1")),
                     ffn, d, f"l{i}_fc2")
        x = b.op("Add", [x, h])
    x = b.layer_norm(x, d, "ln_f", eps=1e-6)
    first = b.op("Gather", [x, b.const(0, "cls_index", np.int64)], "cls_state", axis=1)
    y = b.linear(first, d, classes, "head")
    b.nodes.append(helper.make_node("Identity", [y], ["logits"]))
    m = b.model("vit", [_io("pixel_values", TensorProto.FLOAT, [batch, 3, image, image])],
                [_io("logits", TensorProto.FLOAT, [batch, classes])])
    px = np.random.default_rng(seed + 1).standard_normal((batch, 3, image, image)).astype(np.float32)
    return m, {"pixel_values": px}


BUILDERS = {"bert": build_bert, "gpt": build_gpt, "vit": build_vit}


def build(name: str, sizes: Dict[str, int], seed: int = 0) -> Tuple[Any, Dict[str, np.ndarray]]:
    """Model ``name`` (one of ``BUILDERS``) at ``sizes``: the checked ModelProto and its feeds."""
    import onnx

    m, feeds = BUILDERS[name](**sizes, seed=seed)
    onnx.checker.check_model(m, full_check=True)
    return m, feeds
