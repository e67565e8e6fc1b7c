"""Real models, side by side: ge (ONNX import) vs onnxruntime vs tract, batch 1, at 1 and 2 threads.

CNNs (plain torch definitions below, following torchvision's layouts; random weights, eval mode):
  * resnet50: ResNet-50 v1.5, bottleneck blocks [3, 4, 6, 3], 224x224;
  * googlenet: GoogLeNet / Inception-v1 (torchvision's layout: BasicConv2d = Conv + BatchNorm(eps
    1e-3) + Relu, ceil-mode max pools, nine inception modules, no auxiliary heads), 224x224;
  * densenet121: DenseNet-121, growth 32, bn_size 4, blocks [6, 12, 24, 16], 224x224;
  * shufflenet_v2: ShuffleNet v2 1.0x (channel split, channel shuffle, stages [4, 8, 4]), 224x224;
  * squeezenet1_1: SqueezeNet 1.1 (fire modules, ceil-mode pools, no BatchNorm), 224x224;
  * vgg16: VGG-16 (configuration D, no BatchNorm, 138M parameters), 224x224; ``--small``: 112x112
    (the classifier then takes 512x3x3 features).
Convolutions get He-normal weights and small random biases; BatchNorm layers get random affine
parameters and running statistics calibrated on random inputs (a few forward passes in train
mode), so activations stay in range through the deep networks and the BatchNorms are not
identities. Each is exported once with torch.onnx.export (the TorchScript exporter,
``dynamo=False``, opset 17, BatchNormalization kept as nodes unless ``--fold-bn``) into a cache
directory, with its random input and torch's output (torch is needed only to export).

Transformers:
  * transformer: 4 post-LN encoder layers, d_model 256, 4 heads, FFN 1024 with GELU (erf),
    LayerNorm, learned positional embedding, input [1, 128, 256] (torch, exported as above);
  * bert, gpt, vit: built in ``models_transformer.py`` with ``onnx.helper`` and seeded random
    weights (no torch): an encoder in BERT's structure (Gather word + position + token-type
    embeddings, an attention-mask input, MatMul multi-head attention with Softmax, Erf Gelu,
    LayerNormalization, a Tanh pooler), a GPT-2-style decoder (causal mask through Trilu + Where,
    tanh Gelu, LM head tied to the token embedding through a Transpose) and a ViT (patch Conv,
    class token Concat, position embeddings, pre-LN encoder blocks). Their sizes are in
    ``models_transformer.SIZES`` (``full``, and smaller for ``--quick``) and printed in the header.

Runtimes, each measurement (runtime, model, thread count) in its own subprocess (a crash or a
hang is reported, not fatal; the peak memory is that process's alone):
  * ort: onnxruntime, CPU provider, intra_op_num_threads = threads, inter_op 1, sequential,
    graph optimizations ALL;
  * tract: its Python API (``tract.onnx().load(path).into_model().into_runnable()``: the optimized
    model), where the Python running this script has it installed. The Python API has no
    thread-count option (tract's matrix products run on its single-thread executor), so tract runs
    once, at 1 thread, and the 2-thread rows repeat that time (marked ``*``);
  * ge: ``ge.onnx.load(path)``, ``ge.session.Session({"ge.threads": str(threads)})``, ``add_graph``,
    ``run_graph`` (graph mode).
Checking first: onnxruntime at 1 thread runs first and its outputs are the reference. Every other
measurement compares its first run's outputs (all of them) with the reference before it times
anything: above ``TOLERANCE`` (max|Δ| / max|reference|, 1e-3) the measurement stops, reports
MISMATCH loudly and is left out of the times and the means.
Timing: ``load`` (model file to a runnable session: ``ge.onnx.load`` + ``add_graph``, or
``InferenceSession``; the runtime's own import apart) and the first run (which includes compiling)
are reported as the time to the first result; then warm-up runs, then ``--repeat`` timed runs
(median; a measurement stops early, after at least 3 runs, once its timed runs exceed ``--budget``
seconds). Peak memory: the process's ``ru_maxrss`` at its end (the interpreter, numpy and the
inputs included: the ``base`` line says how much of it that is). Geometric means of ge/ort and
ge/tract over the CNNs, the transformers and all. A model that cannot be exported, loaded or run
by a runtime shows ``fails: <reason>`` in its cell, with the full reason under the table.

Usage: ``python benches/python/bench_models.py [--models resnet50,bert,...] [--threads 1,2]
[--repeat N] [--warmup N] [--budget S] [--quick] [--small] [--json OUT] [--cache DIR] [--fold-bn]
[--runtimes ort,tract,ge]``. ``--quick``: SqueezeNet 1.1 and the three built transformers at small
sizes, 3 timed runs each (under a minute).
"""

from __future__ import annotations

import argparse
import hashlib
import importlib.util
import json
import math
import os
import re
import sys
import tempfile
import time
from typing import Any, Dict, List, Optional, Tuple

import numpy as np

# Machine and package versions, and CPU-time counters: the same as bench_run's.
from bench_run import busy_cpu_s, own_cpu_s, run_worker, versions

CNNS = ("resnet50", "googlenet", "densenet121", "shufflenet_v2", "squeezenet1_1", "vgg16")
BUILT = ("bert", "gpt", "vit")  # onnx.helper models of models_transformer.py
TRANSFORMERS = ("transformer",) + BUILT
MODELS = CNNS + TRANSFORMERS
GROUPS = (("CNNs", CNNS), ("transformers", TRANSFORMERS), ("all", MODELS))
QUICK_MODELS = ("squeezenet1_1",) + BUILT
RUNTIMES = ("ort", "tract", "ge")
SINGLE_THREAD = ("tract",)  # no thread option in tract's Python API
TOLERANCE = 1e-3  # max|Δ| / max|reference| above which a measurement is a mismatch and not timed
OPSET = 17
SEED = 20240607
CACHE_VERSION = 2  # bump when a definition changes: the cached .onnx files are keyed by it
XF_LAYERS, XF_D, XF_HEADS, XF_FFN, XF_SEQ = 4, 256, 4, 1024, 128


# ---------------------------------------------------------------------------------------------
# The models, in plain torch (imported only when a model has to be exported)
# ---------------------------------------------------------------------------------------------


def build_model(name: str, small: bool) -> Tuple[Any, Tuple[int, ...]]:
    """The torch module (default random weights: `init_weights` comes next) and its input shape."""
    import torch
    from torch import nn

    def conv_bn(cin: int, cout: int, k: int, stride: int = 1, pad: int = 0, groups: int = 1,
                relu: bool = True, eps: float = 1e-5) -> nn.Sequential:
        layers: List[nn.Module] = [nn.Conv2d(cin, cout, k, stride, pad, groups=groups, bias=False),
                                   nn.BatchNorm2d(cout, eps=eps)]
        if relu:
            layers.append(nn.ReLU(inplace=True))
        return nn.Sequential(*layers)

    class Bottleneck(nn.Module):  # ResNet v1.5: the stride on the 3x3 convolution
        def __init__(self, cin: int, width: int, stride: int) -> None:
            super().__init__()
            cout = width * 4
            self.body = nn.Sequential(conv_bn(cin, width, 1), conv_bn(width, width, 3, stride, 1),
                                      conv_bn(width, cout, 1, relu=False))
            self.down = (conv_bn(cin, cout, 1, stride, relu=False) if stride != 1 or cin != cout
                         else nn.Identity())

        def forward(self, x: Any) -> Any:
            return torch.relu(self.body(x) + self.down(x))

    class Inception(nn.Module):
        def __init__(self, cin: int, c1: int, c3r: int, c3: int, c5r: int, c5: int, pp: int) -> None:
            super().__init__()
            bc = lambda i, o, k, p=0: conv_bn(i, o, k, 1, p, eps=1e-3)  # noqa: E731
            self.b1 = bc(cin, c1, 1)
            self.b2 = nn.Sequential(bc(cin, c3r, 1), bc(c3r, c3, 3, 1))
            # torchvision uses a 3x3 here where the paper has a 5x5; kept as torchvision has it
            self.b3 = nn.Sequential(bc(cin, c5r, 1), bc(c5r, c5, 3, 1))
            self.b4 = nn.Sequential(nn.MaxPool2d(3, 1, 1, ceil_mode=True), bc(cin, pp, 1))

        def forward(self, x: Any) -> Any:
            return torch.cat([self.b1(x), self.b2(x), self.b3(x), self.b4(x)], 1)

    class DenseLayer(nn.Module):
        def __init__(self, cin: int, growth: int, bn_size: int) -> None:
            super().__init__()
            self.body = nn.Sequential(nn.BatchNorm2d(cin), nn.ReLU(inplace=True),
                                      nn.Conv2d(cin, bn_size * growth, 1, bias=False),
                                      nn.BatchNorm2d(bn_size * growth), nn.ReLU(inplace=True),
                                      nn.Conv2d(bn_size * growth, growth, 3, 1, 1, bias=False))

        def forward(self, x: Any) -> Any:
            return torch.cat([x, self.body(x)], 1)

    class ShuffleUnit(nn.Module):
        def __init__(self, cin: int, cout: int, stride: int) -> None:
            super().__init__()
            bf = cout // 2
            self.stride = stride
            if stride > 1:
                self.branch1 = nn.Sequential(conv_bn(cin, cin, 3, stride, 1, groups=cin, relu=False),
                                             conv_bn(cin, bf, 1))
            self.branch2 = nn.Sequential(conv_bn(cin if stride > 1 else bf, bf, 1),
                                         conv_bn(bf, bf, 3, stride, 1, groups=bf, relu=False),
                                         conv_bn(bf, bf, 1))

        def forward(self, x: Any) -> Any:
            if self.stride == 1:
                x1, x2 = x.chunk(2, dim=1)
                out = torch.cat((x1, self.branch2(x2)), 1)
            else:
                out = torch.cat((self.branch1(x), self.branch2(x)), 1)
            b, c, h, w = out.shape  # channel shuffle, 2 groups
            return out.view(b, 2, c // 2, h, w).transpose(1, 2).contiguous().view(b, c, h, w)

    class Fire(nn.Module):
        def __init__(self, cin: int, sq: int, e1: int, e3: int) -> None:
            super().__init__()
            self.squeeze = nn.Sequential(nn.Conv2d(cin, sq, 1), nn.ReLU(inplace=True))
            self.e1 = nn.Sequential(nn.Conv2d(sq, e1, 1), nn.ReLU(inplace=True))
            self.e3 = nn.Sequential(nn.Conv2d(sq, e3, 3, padding=1), nn.ReLU(inplace=True))

        def forward(self, x: Any) -> Any:
            s = self.squeeze(x)
            return torch.cat([self.e1(s), self.e3(s)], 1)

    class EncoderLayer(nn.Module):  # post-LN, as nn.TransformerEncoderLayer(norm_first=False)
        def __init__(self) -> None:
            super().__init__()
            self.qkv, self.proj = nn.Linear(XF_D, 3 * XF_D), nn.Linear(XF_D, XF_D)
            self.ff1, self.ff2 = nn.Linear(XF_D, XF_FFN), nn.Linear(XF_FFN, XF_D)
            self.ln1, self.ln2 = nn.LayerNorm(XF_D), nn.LayerNorm(XF_D)

        def forward(self, x: Any) -> Any:
            b, s, d = x.shape
            dh = d // XF_HEADS
            q, k, v = self.qkv(x).view(b, s, 3, XF_HEADS, dh).permute(2, 0, 3, 1, 4)
            att = torch.softmax(q @ k.transpose(-2, -1) * (1.0 / math.sqrt(dh)), dim=-1)
            a = (att @ v).transpose(1, 2).reshape(b, s, d)
            x = self.ln1(x + self.proj(a))
            return self.ln2(x + self.ff2(nn.functional.gelu(self.ff1(x))))

    class Encoder(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.pos = nn.Parameter(0.02 * torch.randn(1, XF_SEQ, XF_D))
            self.layers = nn.Sequential(*[EncoderLayer() for _ in range(XF_LAYERS)])
            self.norm = nn.LayerNorm(XF_D)

        def forward(self, x: Any) -> Any:
            return self.norm(self.layers(x + self.pos))

    class Net(nn.Module):  # features, global pooling or flatten, classifier
        def __init__(self, features: nn.Module, head: nn.Module, pool: bool = True) -> None:
            super().__init__()
            self.features, self.head, self.pool = features, head, pool

        def forward(self, x: Any) -> Any:
            x = self.features(x)
            x = nn.functional.adaptive_avg_pool2d(x, 1) if self.pool else x
            return self.head(torch.flatten(x, 1))

    size = 224
    if name == "resnet50":
        layers: List[nn.Module] = [conv_bn(3, 64, 7, 2, 3), nn.MaxPool2d(3, 2, 1)]
        cin = 64
        for width, blocks, stride in ((64, 3, 1), (128, 4, 2), (256, 6, 2), (512, 3, 2)):
            for i in range(blocks):
                layers.append(Bottleneck(cin, width, stride if i == 0 else 1))
                cin = width * 4
        model = Net(nn.Sequential(*layers), nn.Linear(2048, 1000))
    elif name == "googlenet":
        bc = lambda i, o, k, s=1, p=0: conv_bn(i, o, k, s, p, eps=1e-3)  # noqa: E731
        mp = lambda k=3, s=2: nn.MaxPool2d(k, s, ceil_mode=True)  # noqa: E731
        model = Net(nn.Sequential(
            bc(3, 64, 7, 2, 3), mp(), bc(64, 64, 1), bc(64, 192, 3, 1, 1), mp(),
            Inception(192, 64, 96, 128, 16, 32, 32), Inception(256, 128, 128, 192, 32, 96, 64), mp(),
            Inception(480, 192, 96, 208, 16, 48, 64), Inception(512, 160, 112, 224, 24, 64, 64),
            Inception(512, 128, 128, 256, 24, 64, 64), Inception(512, 112, 144, 288, 32, 64, 64),
            Inception(528, 256, 160, 320, 32, 128, 128), mp(2, 2),
            Inception(832, 256, 160, 320, 32, 128, 128), Inception(832, 384, 192, 384, 48, 128, 128)),
            nn.Linear(1024, 1000))
    elif name == "densenet121":
        layers = [nn.Conv2d(3, 64, 7, 2, 3, bias=False), nn.BatchNorm2d(64), nn.ReLU(inplace=True),
                  nn.MaxPool2d(3, 2, 1)]
        c = 64
        for i, n in enumerate((6, 12, 24, 16)):
            for _ in range(n):
                layers.append(DenseLayer(c, 32, 4))
                c += 32
            if i < 3:
                layers += [nn.BatchNorm2d(c), nn.ReLU(inplace=True), nn.Conv2d(c, c // 2, 1, bias=False),
                           nn.AvgPool2d(2, 2)]
                c //= 2
        layers += [nn.BatchNorm2d(c), nn.ReLU(inplace=True)]
        model = Net(nn.Sequential(*layers), nn.Linear(c, 1000))
    elif name == "shufflenet_v2":
        chans = (24, 116, 232, 464, 1024)
        layers = [conv_bn(3, chans[0], 3, 2, 1), nn.MaxPool2d(3, 2, 1)]
        cin = chans[0]
        for repeats, cout in zip((4, 8, 4), chans[1:4]):
            layers += [ShuffleUnit(cin, cout, 2)] + [ShuffleUnit(cout, cout, 1) for _ in range(repeats - 1)]
            cin = cout
        layers.append(conv_bn(cin, chans[4], 1))
        model = Net(nn.Sequential(*layers), nn.Linear(chans[4], 1000))
    elif name == "squeezenet1_1":
        mp = lambda: nn.MaxPool2d(3, 2, ceil_mode=True)  # noqa: E731
        model = Net(nn.Sequential(
            nn.Conv2d(3, 64, 3, 2), nn.ReLU(inplace=True), mp(), Fire(64, 16, 64, 64), Fire(128, 16, 64, 64),
            mp(), Fire(128, 32, 128, 128), Fire(256, 32, 128, 128), mp(), Fire(256, 48, 192, 192),
            Fire(384, 48, 192, 192), Fire(384, 64, 256, 256), Fire(512, 64, 256, 256),
            nn.Dropout(0.5), nn.Conv2d(512, 1000, 1), nn.ReLU(inplace=True)), nn.Identity())
    elif name == "vgg16":
        size = 112 if small else 224
        layers, c = [], 3
        for v in (64, 64, "M", 128, 128, "M", 256, 256, 256, "M", 512, 512, 512, "M", 512, 512, 512, "M"):
            if v == "M":
                layers.append(nn.MaxPool2d(2, 2))
            else:
                layers += [nn.Conv2d(c, int(v), 3, padding=1), nn.ReLU(inplace=True)]
                c = int(v)
        side = size // 32  # torchvision's AdaptiveAvgPool2d((7, 7)) is the identity at 224: left out
        model = Net(nn.Sequential(*layers), nn.Sequential(
            nn.Linear(512 * side * side, 4096), nn.ReLU(inplace=True), nn.Dropout(0.5),
            nn.Linear(4096, 4096), nn.ReLU(inplace=True), nn.Dropout(0.5), nn.Linear(4096, 1000)), pool=False)
    elif name == "transformer":
        return Encoder(), (1, XF_SEQ, XF_D)
    else:
        raise ValueError(f"unknown model {name!r}; known: {', '.join(MODELS)}")
    return model, (1, 3, size, size)


def init_weights(model: Any, shape: Tuple[int, ...]) -> None:
    """He-normal convolutions with small random biases (activations keep their scale through the
    BatchNorm-free VGG and SqueezeNet), random BatchNorm affine parameters and running statistics
    from a few train-mode passes on random inputs."""
    import torch

    with torch.no_grad():
        for m in model.modules():
            if isinstance(m, torch.nn.Conv2d):
                torch.nn.init.kaiming_normal_(m.weight, mode="fan_in", nonlinearity="relu")
                if m.bias is not None:
                    m.bias.normal_(0.0, 0.01)
    bns = [m for m in model.modules() if isinstance(m, torch.nn.BatchNorm2d)]
    if not bns:
        return
    with torch.no_grad():
        for m in bns:
            m.weight.uniform_(0.5, 1.5)
            m.bias.normal_(0.0, 0.1)
            m.momentum = None  # cumulative average over the calibration passes
        model.train()
        for _ in range(3):
            model(torch.randn((2,) + shape[1:]))
    model.eval()


def export(name: str, small: bool, fold_bn: bool, cache: str) -> Tuple[str, str, str]:
    """The cached (model.onnx, input.npy, torch_output.npy), exporting them if missing."""
    tag = f"{name}{'_small' if small and name == 'vgg16' else ''}{'_foldbn' if fold_bn else ''}"
    base = os.path.join(cache, f"{tag}_v{CACHE_VERSION}_op{OPSET}")
    paths = (base + ".onnx", base + "_input.npy", base + "_torch.npy")
    if all(os.path.exists(p) for p in paths):
        return paths
    import warnings

    import torch

    torch.manual_seed(SEED)
    model, shape = build_model(name, small)
    init_weights(model, shape)
    model.eval()
    x = torch.from_numpy(np.random.default_rng(SEED).standard_normal(shape).astype(np.float32))
    with torch.no_grad():
        ref = model(x).numpy()
    os.makedirs(cache, exist_ok=True)
    tmp = paths[0] + f".tmp{os.getpid()}"
    mode = torch.onnx.TrainingMode.EVAL if fold_bn else torch.onnx.TrainingMode.PRESERVE
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        torch.onnx.export(model, (x,), tmp, opset_version=OPSET, dynamo=False, input_names=["x"],
                          output_names=["y"], do_constant_folding=True, training=mode)
    np.save(paths[1], x.numpy())
    np.save(paths[2], ref)
    os.replace(tmp, paths[0])  # last: its presence means the three are complete
    return paths


def build_cached(name: str, size: str, cache: str) -> Tuple[str, str]:
    """The cached (model.onnx, inputs.npz) of a ``models_transformer`` model at ``SIZES[name][size]``,
    building them if missing; keyed by a hash of the builders' source and the sizes."""
    import models_transformer as mt

    with open(mt.__file__, "rb") as fh:
        key = hashlib.sha256(fh.read() + repr(mt.SIZES[name][size]).encode()).hexdigest()[:12]
    base = os.path.join(cache, f"{name}_{size}_{key}_op{mt.OPSET}")
    paths = (base + ".onnx", base + "_inputs.npz")
    if all(os.path.exists(p) for p in paths):
        return paths
    import onnx

    model, feeds = mt.build(name, mt.SIZES[name][size], seed=SEED)
    os.makedirs(cache, exist_ok=True)
    ordered = {i.name: feeds[i.name] for i in model.graph.input}  # the order ge and tract are fed in
    np.savez(paths[1], **ordered)
    tmp = paths[0] + f".tmp{os.getpid()}"
    onnx.save(model, tmp)
    os.replace(tmp, paths[0])  # last: its presence means both are complete
    return paths


def prepare(name: str, args: argparse.Namespace) -> Tuple[str, str, Optional[str]]:
    """(model.onnx, inputs (.npy: one input; .npz: by name, in input order), torch's output or None)."""
    if name in BUILT:
        return build_cached(name, "quick" if args.quick else "full", args.cache) + (None,)
    return export(name, args.small, args.fold_bn, args.cache)


# ---------------------------------------------------------------------------------------------
# The worker: one runtime, one model, one thread count, in its own process
# ---------------------------------------------------------------------------------------------


def short_error(e: BaseException) -> str:
    msg = str(e).strip().splitlines()[0] if str(e).strip() else ""
    kind = type(e).__name__
    ops = re.findall(r"(\w+) \(node '", msg)
    if kind == "TranslationError" and ops:
        return "no translator: " + ", ".join(dict.fromkeys(ops))
    return f"{kind}: {msg}"[:160]


def load_feeds(path: str) -> Dict[str, np.ndarray]:
    """The inputs by name, in the model's input order (the CNNs' single input is ``x``)."""
    if path.endswith(".npz"):
        with np.load(path) as z:
            return {k: z[k] for k in z.files}
    return {"x": np.load(path)}


def load_outputs(path: str) -> List[np.ndarray]:
    with np.load(path) as z:
        return [z[f"arr_{i}"] for i in range(len(z.files))]


def compare(outs: List[np.ndarray], refs: List[np.ndarray]) -> Dict[str, float]:
    """Over all outputs: the largest max|Δ| and the largest max|Δ| / max|reference|."""
    if len(outs) != len(refs) or any(np.shape(o) != np.shape(r) for o, r in zip(outs, refs)):
        return {"shape_mismatch": 1.0}
    worst = {"max_abs": 0.0, "max_rel": 0.0}
    for o, r in zip(outs, refs):
        r = np.asarray(r, dtype=np.float64)
        d = float(np.max(np.abs(np.asarray(o, dtype=np.float64) - r))) if r.size else 0.0
        worst["max_abs"] = max(worst["max_abs"], d)
        worst["max_rel"] = max(worst["max_rel"], d / max(float(np.max(np.abs(r))) if r.size else 0.0, 1e-30))
    return worst


def matches(err: Dict[str, float]) -> bool:
    return "shape_mismatch" not in err and err["max_rel"] <= TOLERANCE  # NaN compares False


def peak_mib() -> float:
    """This process's peak resident memory: VmHWM (of this process's own address space: unlike
    ``ru_maxrss``, which Linux carries over ``execve``, the driver's peak does not leak into it)."""
    try:
        with open("/proc/self/status") as fh:
            for line in fh:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) / 1024.0  # kB
    except (OSError, ValueError, IndexError):
        pass
    import resource

    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0  # KiB on Linux


def open_runtime(rt: str, path: str, threads: int, feeds: Dict[str, np.ndarray]) -> Tuple[Any, Any]:
    """(run, to_numpy) for ``rt`` on the model file ``path``: ``run()`` runs it once on ``feeds``,
    ``to_numpy(result)`` makes its outputs a list of arrays."""
    xs = list(feeds.values())
    if rt == "ort":
        import onnxruntime as ort

        so = ort.SessionOptions()
        so.intra_op_num_threads = threads
        so.inter_op_num_threads = 1
        so.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
        so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
        sess = ort.InferenceSession(path, so, providers=["CPUExecutionProvider"])
        names = [i.name for i in sess.get_inputs()]
        by_name = dict(zip(names, xs)) if list(feeds) == ["x"] else feeds
        return (lambda: sess.run(None, by_name)), (lambda out: [np.asarray(o) for o in out])
    if rt == "tract":
        import tract

        runnable = tract.onnx().load(path).into_model().into_runnable()
        return (lambda: runnable.run(xs)), (lambda out: [o.to_numpy() for o in out])
    import ge.onnx
    import ge.session

    graph = ge.onnx.load(path)
    gsess = ge.session.Session({"ge.threads": str(threads)})
    gsess.add_graph(1, graph)
    return (lambda: gsess.run_graph(1, xs)), (lambda out: [o.numpy() for o in out])


def import_runtime(rt: str) -> None:
    """Imports the runtime's module (apart from the load time)."""
    if rt == "ort":
        import onnxruntime  # noqa: F401
    elif rt == "tract":
        import tract  # noqa: F401
    else:
        for attempt in range(5):  # the ge extension may be being rebuilt right now: retry briefly
            try:
                import ge.onnx  # noqa: F401
                import ge.session  # noqa: F401

                return
            except (ImportError, OSError):
                if attempt == 4:
                    raise
                time.sleep(3)


def worker(spec: Dict[str, Any]) -> Dict[str, Any]:
    """One measurement: load, first run, the check against ``spec["reference"]`` (if any), then,
    only if it matches, warm-up and timed runs. Writes the first run's outputs to ``spec["out"]``."""
    rt, path, threads = spec["runtime"], spec["model"], spec["threads"]
    feeds = load_feeds(spec["input"])
    res: Dict[str, Any] = {"base_mib": peak_mib()}
    stage = "import"
    try:
        t0 = time.perf_counter()
        import_runtime(rt)
        res["import_s"] = time.perf_counter() - t0
        stage = "load"
        t0 = time.perf_counter()
        run, to_np = open_runtime(rt, path, threads, feeds)
        res["load_s"] = time.perf_counter() - t0
        stage = "run"
        t0 = time.perf_counter()
        outs = [np.asarray(o) for o in to_np(run())]
        res["first_run_s"] = time.perf_counter() - t0
    except Exception as e:  # noqa: BLE001 (reported in the table)
        res["error"] = f"{stage}: {short_error(e)}" if stage != "load" else short_error(e)
        res["error_full"] = f"{stage}: {type(e).__name__}: {e}"
        res["peak_mib"] = peak_mib()
        return res
    np.savez(spec["out"], *outs)
    if spec.get("reference"):
        res["error_vs_ref"] = compare(outs, load_outputs(spec["reference"]))
        if not matches(res["error_vs_ref"]):
            res["mismatch"] = True
            res["peak_mib"] = peak_mib()
            return res
    for _ in range(spec["warmup"]):
        run()
    times: List[float] = []
    start = time.perf_counter()
    while len(times) < spec["repeat"] and (len(times) < 3 or time.perf_counter() - start < spec["budget"]):
        t = time.perf_counter()
        run()
        times.append(time.perf_counter() - t)
    res.update(median_s=float(np.median(times)), min_s=float(np.min(times)), repeats=len(times),
               peak_mib=peak_mib())
    return res


# ---------------------------------------------------------------------------------------------
# The driver
# ---------------------------------------------------------------------------------------------


def geomean(v: List[float]) -> Optional[float]:
    return math.exp(sum(math.log(a) for a in v) / len(v)) if v else None


def fmt_ms(ms: float) -> str:
    return f"{ms:.2f}" if ms >= 1 else f"{ms:.3f}"


def mismatch_text(err: Dict[str, float]) -> str:
    if "shape_mismatch" in err:
        return "MISMATCH: output shapes differ"
    return f"MISMATCH: max rel {err['max_rel']:.1e} > {TOLERANCE:g}"


def print_table(rows: List[List[str]]) -> None:
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    for r in rows:
        print("  ".join(c.rjust(w) if i else c.ljust(w) for i, (c, w) in enumerate(zip(r, widths))))


def print_geomeans(what: str, ratios: Dict[Tuple[str, int, str], List[float]], peers: List[str],
                   threads: List[int], models: List[str]) -> Dict[str, Optional[float]]:
    """One line per peer and thread count: the geometric mean of ge/peer over each group."""
    out: Dict[str, Optional[float]] = {}
    for th in threads:
        for peer in peers:
            parts = []
            for group, members in GROUPS:
                if not any(m in members for m in models):
                    continue
                v = [x for m in models if m in members for x in ratios.get((m, th, peer), [])]
                gm = geomean(v)
                out[f"{what}_ge_over_{peer}_{th}t_{group}"] = gm
                parts.append(f"{group} {gm:.2f} ({len(v)})" if gm else f"{group} - (0)")
            s = "s" if th > 1 else ""
            print(f"# geometric mean of {what} ge/{peer} at {th} thread{s}: " + ", ".join(parts))
    return out


def main(argv: List[str]) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--models", default=None,
                    help="comma-separated subset of: " + ", ".join(MODELS) + " (default: all; --quick: "
                    + ", ".join(QUICK_MODELS) + ")")
    ap.add_argument("--threads", default="1,2", help="comma-separated thread counts (default 1,2)")
    ap.add_argument("--runtimes", default=",".join(RUNTIMES), help="comma-separated subset of ort,tract,ge")
    ap.add_argument("--repeat", type=int, default=None,
                    help="timed runs per measurement (median; default 10, --quick 3)")
    ap.add_argument("--warmup", type=int, default=None, help="untimed runs after the first one (default 2,"
                    " --quick 1)")
    ap.add_argument("--budget", type=float, default=None,
                    help="seconds of timed runs after which a measurement stops (>= 3 runs; default 20,"
                    " --quick 0.5)")
    ap.add_argument("--timeout", type=float, default=600.0,
                    help="seconds per measurement before it is killed (default 600)")
    ap.add_argument("--quick", action="store_true",
                    help="smoke run: SqueezeNet 1.1 and the built transformers at small sizes, 3 timed runs")
    ap.add_argument("--small", action="store_true", help="VGG-16 at 112x112 instead of 224x224")
    ap.add_argument("--fold-bn", action="store_true",
                    help="export with BatchNorm folded into the convolutions (the exporter's default)")
    ap.add_argument("--cache", default=os.path.join(tempfile.gettempdir(), "ge_bench_models"),
                    help="where the exported .onnx files are kept (default: %(default)s)")
    ap.add_argument("--json", metavar="OUT", help="write the results as JSON to OUT")
    ap.add_argument("--worker", help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.worker:
        print(json.dumps(worker(json.loads(args.worker))), flush=True)
        return
    for opt, full, quick in (("repeat", 10, 3), ("warmup", 2, 1), ("budget", 20.0, 0.5)):
        if getattr(args, opt) is None:
            setattr(args, opt, quick if args.quick else full)

    models = [m for m in (args.models or ",".join(QUICK_MODELS if args.quick else MODELS)).split(",") if m]
    runtimes = [r for r in args.runtimes.split(",") if r]
    threads = [int(t) for t in args.threads.split(",") if t]
    for m in models:
        if m not in MODELS:
            sys.exit(f"unknown model {m!r}; known: {', '.join(MODELS)}")
    for r in runtimes:
        if r not in RUNTIMES:
            sys.exit(f"unknown runtime {r!r}; known: {', '.join(RUNTIMES)}")
    models.sort(key=MODELS.index)  # CNNs first, then the transformers
    print(f"# {versions()}")
    absent = [r for r in runtimes if importlib.util.find_spec({"ort": "onnxruntime"}.get(r, r)) is None]
    for r in absent:
        print(f"# {r}: not installed in {sys.executable}: left out")
    runtimes = [r for r in runtimes if r not in absent]
    bn = "folded" if args.fold_bn else "as nodes"
    print(f"# batch 1; CNNs and 'transformer': opset {OPSET}, TorchScript exporter, BatchNorm {bn};"
          f" cache {args.cache}")
    built = [m for m in models if m in BUILT]
    if built:
        import models_transformer as mt

        for m in built:
            sizes = mt.SIZES[m]["quick" if args.quick else "full"]
            dims = ", ".join(f"{k} {v}" for k, v in sizes.items())
            print(f"# {m} (onnx.helper, opset {mt.OPSET}): {dims}")
    print(f"# timing: load and first run apart, {args.warmup} warm-up runs, median of {args.repeat} runs"
          f" (>= 3, fewer once {args.budget:g} s are spent); each measurement in its own subprocess,"
          f" after its outputs match onnxruntime 1 thread's within {TOLERANCE:g} (max|Δ| / max|ref|)")
    print("# ort: intra-op threads, optimizations ALL; ge: ge.threads, graph mode; tract: no thread option in"
          " its Python API: runs at 1 thread (2-thread rows repeat it, marked *)")
    busy0, own0, t_start = busy_cpu_s(), own_cpu_s(), time.perf_counter()

    results: Dict[str, Dict[str, Any]] = {}
    with tempfile.TemporaryDirectory(prefix="bench_models_") as tmp:
        for m in models:
            entry: Dict[str, Any] = {"runs": {}}
            results[m] = entry
            t0 = time.perf_counter()
            try:
                onnx_path, in_path, torch_path = prepare(m, args)
            except Exception as e:  # noqa: BLE001
                entry["error"] = f"export: {short_error(e)}"
                print(f"# {m}: export fails: {entry['error']}", file=sys.stderr, flush=True)
                continue
            entry["export_s"] = time.perf_counter() - t0
            entry["onnx"] = onnx_path
            entry["onnx_mib"] = os.path.getsize(onnx_path) / 2**20
            entry["input_shapes"] = {k: list(v.shape) for k, v in load_feeds(in_path).items()}
            jobs = []
            for rt in runtimes:
                ths = [1] if rt in SINGLE_THREAD else threads
                jobs += [(rt, th) for th in ths]
            jobs.sort(key=lambda j: (j[0] != "ort" or j[1] != 1))  # ort at 1 thread first: the reference
            reference: Optional[str] = None
            for rt, th in jobs:
                out = os.path.join(tmp, f"{m}_{rt}_{th}.npz")
                spec = {"runtime": rt, "model": onnx_path, "input": in_path, "threads": th, "out": out,
                        "repeat": args.repeat, "warmup": args.warmup, "budget": args.budget,
                        "reference": reference}
                r = run_worker(spec, args.timeout, script=__file__)
                entry["runs"][f"{rt}/{th}"] = r
                if (rt, th) == ("ort", 1) and "error" not in r:
                    reference = out
                    entry["reference"] = "ort/1"
                if torch_path and "error" not in r and rt == "ort" and th == 1:
                    r["error_vs_torch"] = compare(load_outputs(out), [np.load(torch_path)])
                if "error" in r:
                    msg = r["error"]
                elif r.get("mismatch"):
                    msg = f"!! {mismatch_text(r['error_vs_ref'])}: outputs differ from onnxruntime's,"
                    msg += " not timed"
                else:
                    msg = f"{r['median_s'] * 1e3:.2f} ms ({r['repeats']} runs)"
                print(f"# {m} {rt} {th}t: {msg}", file=sys.stderr, flush=True)

    summary = report(results, models, runtimes, threads, args)
    wall = time.perf_counter() - t_start
    busy1 = busy_cpu_s()
    others = (None if busy0 is None or busy1 is None
              else max(0.0, (busy1 - busy0) - (own_cpu_s() - own0)) / wall)
    print(f"# total {wall:.0f} s" + ("" if others is None else
          f"; other processes used {others:.2f} of the {os.cpu_count()} CPUs meanwhile"
          " (above ~0.1 the timings, the 2-thread ones most, are unreliable)"))
    if args.json:
        doc = {"versions": versions(), "args": {k: v for k, v in vars(args).items() if k != "worker"},
               "models": results, "summary": summary, "total_s": wall,
               "other_cpu_load": others}
        with open(args.json, "w") as fh:
            json.dump(doc, fh, indent=1)
        print(f"# results written to {args.json}")


def report(results: Dict[str, Dict[str, Any]], models: List[str], runtimes: List[str], threads: List[int],
           args: argparse.Namespace) -> Dict[str, Any]:
    """The tables (times, time to the first result, peak memory) with their ratios and geometric
    means, then the failures and mismatches in full. Returns the geometric means."""

    def run_of(m: str, rt: str, th: int) -> Tuple[Optional[Dict[str, Any]], str]:
        """The measurement behind a cell (tract's 2-thread rows: its 1-thread one) and a mark."""
        key = f"{rt}/{1 if rt in SINGLE_THREAD else th}"
        return results[m].get("runs", {}).get(key), "*" if rt in SINGLE_THREAD and th != 1 else ""

    def reason(m: str, r: Optional[Dict[str, Any]]) -> Optional[str]:
        if "error" in results[m]:
            return "fails: " + results[m]["error"]
        if r is None:
            return "-"
        if "error" in r:
            return "fails: " + r["error"]
        if r.get("mismatch"):
            return mismatch_text(r["error_vs_ref"])
        return None

    def cell_reason(why: str) -> str:  # the full reasons are listed under the tables
        if why.startswith("fails: no translator: "):
            ops = why[len("fails: no translator: "):].split(", ")
            return f"fails: no translator: {ops[0]}" + (f" +{len(ops) - 1}" if len(ops) > 1 else "")
        if why.startswith("MISMATCH"):
            return "MISMATCH"
        return why if len(why) <= 36 else why[:33] + "..."

    def value(m: str, rt: str, th: int, key: str) -> Tuple[str, Optional[float]]:
        """A cell's text and value; none where the measurement failed or its outputs did not match."""
        r, mark = run_of(m, rt, th)
        why = reason(m, r)
        if why or r is None:
            return cell_reason(why or "-"), None
        if key == "ms":
            v = r["median_s"] * 1e3
        elif key == "first_ms":
            v = (r["load_s"] + r["first_run_s"]) * 1e3
        else:
            v = r[key]
        return (f"{v:.0f}" if key == "peak_mib" else fmt_ms(v)) + mark, v

    def err_text(m: str, rt: str, th: int) -> str:
        ev = results[m].get("runs", {}).get(f"{rt}/{th}", {}).get("error_vs_ref")
        if not ev:
            return "-"
        if "shape_mismatch" in ev:
            return "shape differs"
        return f"{ev['max_abs']:.1e} / {ev['max_rel']:.1e}" + ("" if matches(ev) else " !!")

    def name_of(m: str) -> str:
        if m == "vgg16" and args.small:
            return f"{m}@112"
        return f"{m}-quick" if m in BUILT and args.quick else m

    peers = [p for p in ("ort", "tract") if p in runtimes] if "ge" in runtimes else []
    shown = [rt for rt in RUNTIMES if rt in runtimes]
    summary: Dict[str, Any] = {}
    for title, keys in (("ms per run (median), batch 1; ratios: ge / peer at the same row (tract always 1"
                         " thread); errors vs onnxruntime 1 thread: max|Δ| / max|Δ|÷max|ref|", ("ms",)),
                        ("time to the first result: load (model file to session) + first run, ms; ratios"
                         " ge / peer", ("first_ms",)),
                        ("peak resident memory of each measurement's process (VmHWM, MiB); ratios ge / peer",
                         ("peak_mib",))):
        print()
        print("## " + title)
        head = ["model", "threads"]
        for key in keys:
            unit = {"ms": "ms", "first_ms": "first ms", "peak_mib": "MiB"}[key]
            head += [f"{rt} {unit}" for rt in shown] + [f"ge/{p}" for p in peers]
        if keys == ("ms",):
            head += ["ge error"] + (["tract error"] if "tract" in runtimes else [])
        rows: List[List[str]] = [head]
        ratios: Dict[str, Dict[Tuple[str, int, str], List[float]]] = {k: {} for k in keys}
        for i, m in enumerate(models):
            if i and m in TRANSFORMERS and models[i - 1] in CNNS:
                rows.append([""] * len(head))
            for th in threads:
                row = [name_of(m) if th == threads[0] else "", str(th)]
                for key in keys:
                    vals = {rt: value(m, rt, th, key) for rt in shown}
                    row += [vals[rt][0] for rt in shown]
                    g = vals.get("ge", ("", None))[1]
                    for p in peers:
                        pv = vals[p][1]
                        if g and pv:
                            ratios[key].setdefault((m, th, p), []).append(g / pv)
                        row.append(f"{g / pv:.2f}" if g and pv else "-")
                if keys == ("ms",):
                    row.append(err_text(m, "ge", th))
                    if "tract" in runtimes:
                        row.append(err_text(m, "tract", 1) if th == threads[0] else "")
                rows.append(row)
        print_table(rows)
        print()
        for key in keys:
            what = {"ms": "time", "first_ms": "first-result", "peak_mib": "peak-memory"}[key]
            summary.update(print_geomeans(what, ratios[key], peers, threads, models))
        if keys == ("peak_mib",):
            bases = [r["base_mib"] for m in models for r in results[m].get("runs", {}).values()
                     if "base_mib" in r]
            if bases:
                print(f"# of each peak, the interpreter, numpy and the inputs take {min(bases):.0f}-"
                      f"{max(bases):.0f} MiB (measured before the runtime's import)")
    for m in models:  # the full reasons, once per model and runtime
        if "error" in results[m]:
            print(f"# fails: {m}: {results[m]['error']}")
            continue
        for rt in shown:
            by_why: Dict[str, List[str]] = {}
            for th in ([1] if rt in SINGLE_THREAD else threads):
                r = results[m]["runs"].get(f"{rt}/{th}", {})
                if "error" in r:
                    by_why.setdefault(r.get("error_full", r["error"]), []).append(f"{th}t")
                elif r.get("mismatch"):
                    why = "!! " + mismatch_text(r["error_vs_ref"]) + ": not timed"
                    by_why.setdefault(why, []).append(f"{th}t")
            for why, ths in by_why.items():
                if why.startswith("!! "):
                    print(f"# !! {m} {rt} {', '.join(ths)}: {why[3:]}")
                else:
                    print(f"# fails: {m} {rt} {', '.join(ths)}: {why}")
    for m in models:
        o = results[m].get("runs", {}).get("ort/1", {}).get("error_vs_torch")
        e = results[m]
        if "onnx_mib" in e:
            torch_note = f"ort vs torch max|Δ| {o['max_abs']:.1e}; " if o and "max_abs" in o else ""
            shapes = ", ".join(f"{k} {v}" for k, v in e["input_shapes"].items())
            ref = "" if e.get("reference") else " (no onnxruntime reference: outputs unchecked)"
            print(f"#   {name_of(m)}: {torch_note}onnx {e['onnx_mib']:.1f} MiB; inputs {shapes}{ref}")
    return summary


if __name__ == "__main__":
    main(sys.argv[1:])
