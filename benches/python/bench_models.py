"""Real models, side by side: ge (ONNX import) vs onnxruntime vs tract, batch 1, at 1 and 2 threads.

Models (plain torch definitions below, following torchvision's layouts; random weights, eval mode):
  * resnet50: ResNet-50 v1.5, bottleneck blocks [3, 4, 6, 3], 224x224;
  * googlenet: GoogLeNet / Inception-v1 (torchvision's layout: BasicConv2d = Conv + BatchNorm(eps
    1e-3) + Relu, ceil-mode max pools, nine inception modules, no auxiliary heads), 224x224;
  * densenet121: DenseNet-121, growth 32, bn_size 4, blocks [6, 12, 24, 16], 224x224;
  * shufflenet_v2: ShuffleNet v2 1.0x (channel split, channel shuffle, stages [4, 8, 4]), 224x224;
  * squeezenet1_1: SqueezeNet 1.1 (fire modules, ceil-mode pools, no BatchNorm), 224x224;
  * vgg16: VGG-16 (configuration D, no BatchNorm, 138M parameters), 224x224; ``--small``: 112x112
    (the classifier then takes 512x3x3 features);
  * transformer: 4 post-LN encoder layers, d_model 256, 4 heads, FFN 1024 with GELU (erf),
    LayerNorm, learned positional embedding, input [1, 128, 256].
Convolutions get He-normal weights and small random biases; BatchNorm layers get random affine
parameters and running statistics calibrated on random inputs (a few forward passes in train
mode), so activations stay in range through the deep networks and the BatchNorms are not
identities. Each model is exported once with torch.onnx.export (the
TorchScript exporter, ``dynamo=False``, opset 17, BatchNormalization kept as nodes unless
``--fold-bn``) into a cache directory, with its random input and torch's output.

Runtimes, each measurement in its own subprocess (a crash or a hang is reported, not fatal):
  * ort: onnxruntime, CPU provider, intra_op_num_threads = threads, inter_op 1, sequential,
    graph optimizations ALL;
  * tract: its Python API (``tract.onnx().load(path).into_model().into_runnable()``: the optimized
    model). The Python API has no thread-count option (tract's matrix products run on its
    single-thread executor), so tract runs once, at 1 thread, and the 2-thread rows repeat that
    time (marked ``*``);
  * ge: ``ge.onnx.load(path)``, ``ge.session.Session({"ge.threads": str(threads)})``, ``add_graph``,
    ``run_graph`` (graph mode).
Timing: the first run (which includes compiling) is reported separately, then warm-up runs, then
``--repeat`` timed runs (median; a measurement stops early, after at least 3 runs, once its timed
runs exceed ``--budget`` seconds). Outputs are compared with onnxruntime's at 1 thread (max
absolute error, and that over max |reference|). A model that cannot be exported, loaded or run by
a runtime shows ``fails: <reason>`` in its cell; the rest goes on.

Usage: ``python benches/python/bench_models.py [--models resnet50,vgg16,...] [--threads 1,2]
[--repeat N] [--small] [--json OUT] [--cache DIR] [--fold-bn] [--runtimes ort,tract,ge]``.
"""

from __future__ import annotations

import argparse
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

MODELS = ("resnet50", "googlenet", "densenet121", "shufflenet_v2", "squeezenet1_1", "vgg16", "transformer")
RUNTIMES = ("ort", "tract", "ge")
LABEL = {"ort": "ort", "tract": "tract", "ge": "ge"}
SINGLE_THREAD = ("tract",)  # no thread option in tract's Python API
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


def worker(spec: Dict[str, Any]) -> Dict[str, Any]:
    rt, path, threads = spec["runtime"], spec["model"], spec["threads"]
    x = np.load(spec["input"])
    stage = "import"
    try:
        t0 = time.perf_counter()
        if rt == "ort":
            import onnxruntime as ort

            stage = "load"
            so = ort.SessionOptions()
            so.intra_op_num_threads = threads
            so.inter_op_num_threads = 1
            so.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
            so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
            sess = ort.InferenceSession(path, so, providers=["CPUExecutionProvider"])
            feeds = {sess.get_inputs()[0].name: x}
            run, to_np = (lambda: sess.run(None, feeds)), (lambda out: out[0])
        elif rt == "tract":
            import tract

            stage = "load"
            runnable = tract.onnx().load(path).into_model().into_runnable()
            run, to_np = (lambda: runnable.run([x])), (lambda out: out[0].to_numpy())
        else:
            for attempt in range(5):  # the ge extension may be being rebuilt right now: retry briefly
                try:
                    import ge.onnx
                    import ge.session

                    break
                except (ImportError, OSError):
                    if attempt == 4:
                        raise
                    time.sleep(3)
            stage = "load"
            graph = ge.onnx.load(path)
            stage = "compile"
            sess = ge.session.Session({"ge.threads": str(threads)})
            sess.add_graph(1, graph)
            run, to_np = (lambda: sess.run_graph(1, [x])), (lambda out: out[0].numpy())
        load_s = time.perf_counter() - t0
        stage = "run"
        t0 = time.perf_counter()
        out = np.asarray(to_np(run()), dtype=np.float32)
        first_s = time.perf_counter() - t0
    except Exception as e:  # noqa: BLE001 (reported in the table)
        return {"error": f"{stage}: {short_error(e)}" if stage != "load" else short_error(e)}
    np.save(spec["out"], out)
    for _ in range(spec["warmup"]):
        run()
    times: List[float] = []
    start = time.perf_counter()
    while len(times) < spec["repeat"] and (len(times) < 3 or time.perf_counter() - start < spec["budget"]):
        t = time.perf_counter()
        run()
        times.append(time.perf_counter() - t)
    return {"median_s": float(np.median(times)), "min_s": float(np.min(times)), "repeats": len(times),
            "load_s": load_s, "first_run_s": first_s}


# ---------------------------------------------------------------------------------------------
# The driver
# ---------------------------------------------------------------------------------------------


def compare(out: np.ndarray, ref: np.ndarray) -> Dict[str, float]:
    if out.shape != ref.shape:
        return {"shape_mismatch": 1.0}
    d = float(np.max(np.abs(out.astype(np.float64) - ref)))
    return {"max_abs": d, "max_rel": d / max(float(np.max(np.abs(ref))), 1e-30)}


def geomean(v: List[float]) -> Optional[float]:
    return math.exp(sum(math.log(a) for a in v) / len(v)) if v else None


def main(argv: List[str]) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--models", default=",".join(MODELS),
                    help="comma-separated subset of: " + ", ".join(MODELS))
    ap.add_argument("--threads", default="1,2", help="comma-separated thread counts (default 1,2)")
    ap.add_argument("--runtimes", default=",".join(RUNTIMES), help="comma-separated subset of ort,tract,ge")
    ap.add_argument("--repeat", type=int, default=10, help="timed runs per measurement (median; default 10)")
    ap.add_argument("--warmup", type=int, default=2, help="untimed runs after the first one (default 2)")
    ap.add_argument("--budget", type=float, default=20.0,
                    help="seconds of timed runs after which a measurement stops (>= 3 runs; default 20)")
    ap.add_argument("--timeout", type=float, default=600.0,
                    help="seconds per measurement before it is killed (default 600)")
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

    models = [m for m in args.models.split(",") if m]
    runtimes = [r for r in args.runtimes.split(",") if r]
    threads = [int(t) for t in args.threads.split(",") if t]
    for m in models:
        if m not in MODELS:
            sys.exit(f"unknown model {m!r}; known: {', '.join(MODELS)}")
    for r in runtimes:
        if r not in RUNTIMES:
            sys.exit(f"unknown runtime {r!r}; known: {', '.join(RUNTIMES)}")
    print(f"# {versions()}")
    bn = "folded" if args.fold_bn else "as nodes"
    print(f"# batch 1; opset {OPSET}, TorchScript exporter, BatchNorm {bn}; cache {args.cache}")
    print(f"# timing: first run apart, {args.warmup} warm-up runs, median of {args.repeat} runs (>= 3, fewer"
          f" once {args.budget:g} s are spent); each measurement in its own subprocess")
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
                onnx_path, in_path, torch_path = export(m, args.small, args.fold_bn, args.cache)
            except Exception as e:  # noqa: BLE001
                entry["error"] = f"export: {short_error(e)}"
                print(f"# {m}: export fails: {entry['error']}", file=sys.stderr, flush=True)
                continue
            entry["export_s"] = time.perf_counter() - t0
            entry["onnx"] = onnx_path
            entry["onnx_mib"] = os.path.getsize(onnx_path) / 2**20
            entry["input_shape"] = list(np.load(in_path, mmap_mode="r").shape)
            jobs = []
            for rt in runtimes:
                ths = [1] if rt in SINGLE_THREAD else threads
                jobs += [(rt, th) for th in ths]
            jobs.sort(key=lambda j: (j[0] != "ort" or j[1] != 1))  # ort at 1 thread first: the reference
            for rt, th in jobs:
                out = os.path.join(tmp, f"{m}_{rt}_{th}.npy")
                spec = {"runtime": rt, "model": onnx_path, "input": in_path, "threads": th, "out": out,
                        "repeat": args.repeat, "warmup": args.warmup, "budget": args.budget}
                r = run_worker(spec, args.timeout, script=__file__)
                if "error" not in r:
                    r["output"] = out
                entry["runs"][f"{rt}/{th}"] = r
                msg = r["error"] if "error" in r else f"{r['median_s'] * 1e3:.2f} ms ({r['repeats']} runs)"
                print(f"# {m} {rt} {th}t: {msg}", file=sys.stderr, flush=True)
            # references: onnxruntime at 1 thread (else the first runtime that ran); torch for ort
            torch_ref = np.load(torch_path).astype(np.float64)
            ran = [k for k in ["ort/1"] + list(entry["runs"]) if "output" in entry["runs"].get(k, {})]
            ref_key = ran[0] if ran else None
            entry["reference"] = ref_key
            ref = np.load(entry["runs"][ref_key]["output"]).astype(np.float64) if ref_key else None
            for k, r in entry["runs"].items():
                if "output" in r:
                    o = np.load(r.pop("output"))
                    if ref is not None:
                        r["error_vs_ref"] = compare(o, ref)
                    r["error_vs_torch"] = compare(o, torch_ref)

    # ---- the table
    def cell(m: str, rt: str, th: int) -> Tuple[str, Optional[float]]:
        e = results[m]
        if "error" in e:
            return "fails: " + e["error"], None
        key = f"{rt}/{1 if rt in SINGLE_THREAD else th}"
        r = e["runs"].get(key)
        if r is None:
            return "-", None
        if "error" in r:
            return "fails: " + r["error"], None
        ms = r["median_s"] * 1e3
        mark = "*" if rt in SINGLE_THREAD and th != 1 else ""
        return (f"{ms:.2f}" if ms >= 1 else f"{ms:.3f}") + mark, ms

    def cell_reason(why: str) -> str:  # the full reasons are listed under the table
        if why.startswith("no translator: "):
            ops = why[len("no translator: "):].split(", ")
            return f"no translator: {ops[0]}" + (f" +{len(ops) - 1}" if len(ops) > 1 else "")
        return why if len(why) <= 36 else why[:33] + "..."

    def err_text(m: str, rt: str, th: int) -> str:
        r = results[m].get("runs", {}).get(f"{rt}/{th}", {})
        ev = r.get("error_vs_ref")
        if not ev:
            return "-"
        if "shape_mismatch" in ev:
            return "shape differs"
        return f"{ev['max_abs']:.1e} / {ev['max_rel']:.1e}"

    print()
    print("## ms per run (median), batch 1; ratios: ge / peer at the same row (tract always 1 thread);"
          " errors vs onnxruntime 1 thread: max|Δ| / max|Δ|÷max|ref|")
    rows: List[List[str]] = [["model", "threads", "ort ms", "tract ms", "ge ms", "ge/ort", "ge/tract",
                              "ge error", "tract error"]]
    failures: Dict[Tuple[str, str, str], List[int]] = {}
    ratios: Dict[int, Dict[str, List[float]]] = {th: {"ort": [], "tract": []} for th in threads}
    for m in models:
        for th in threads:
            cells = {rt: cell(m, rt, th) for rt in RUNTIMES}
            name = f"{m}@112" if m == "vgg16" and args.small else m
            row = [name if th == threads[0] else "", str(th)]
            for rt in RUNTIMES:
                text, _ = cells[rt]
                if text.startswith("fails: "):
                    failures.setdefault((m, rt, text[7:]), []).append(th)
                    text = "fails: " + cell_reason(text[7:])
                row.append(text)
            g = cells["ge"][1]
            for peer in ("ort", "tract"):
                p = cells[peer][1]
                if g and p:
                    ratios[th][peer].append(g / p)
                row.append(f"{g / p:.2f}" if g and p else "-")
            row += [err_text(m, "ge", th), err_text(m, "tract", 1) if th == threads[0] else ""]
            rows.append(row)
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    for r in rows:
        print("  ".join(c.rjust(w) if i else c.ljust(w) for i, (c, w) in enumerate(zip(r, widths))))
    print()
    summary: Dict[str, Any] = {}
    for th in threads:
        for peer in ("ort", "tract"):
            v = ratios[th][peer]
            gm = geomean(v)
            summary[f"geomean_ge_over_{peer}_{th}t"] = gm
            over = (f"{gm:.2f} over {len(v)} model{'s' if len(v) != 1 else ''}" if gm
                    else "- (no model ran on both)")
            print(f"# geometric mean of ge/{peer} at {th} thread{'s' if th > 1 else ''}: {over}")
    for (m, rt, why), ths in failures.items():  # the full reasons, once per model and runtime
        on = "" if rt in SINGLE_THREAD or "error" in results[m] else " " + ", ".join(f"{t}t" for t in ths)
        print(f"# fails: {m} {rt}{on}: {why}")
    for m in models:
        e = results[m]
        ref_key = e.get("reference")
        o = e["runs"][ref_key].get("error_vs_torch") if ref_key else None
        if o and "max_abs" in o:
            rt, th = ref_key.split("/")
            note = "" if ref_key == "ort/1" else f" (errors above are against {rt} at {th}t)"
            print(f"#   {m}: {rt} vs torch max|Δ| {o['max_abs']:.1e}; onnx {e['onnx_mib']:.0f} MiB, input"
                  f" {e['input_shape']}{note}")
    wall = time.perf_counter() - t_start
    busy1 = busy_cpu_s()
    others = (None if busy0 is None or busy1 is None
              else max(0.0, (busy1 - busy0) - (own_cpu_s() - own0)) / wall)
    print(f"# total {wall:.0f} s" + ("" if others is None else
          f"; other processes used {others:.2f} of the {os.cpu_count()} CPUs meanwhile"
          " (above ~0.1 the timings, the 2-thread ones most, are unreliable)"))
    if args.json:
        doc = {"versions": versions(), "args": {k: v for k, v in vars(args).items() if k != "worker"},
               "models": results, "summary": summary, "total_s": wall, "other_cpu_load": others}
        with open(args.json, "w") as fh:
            json.dump(doc, fh, indent=1)
        print(f"# results written to {args.json}")


if __name__ == "__main__":
    main(sys.argv[1:])
