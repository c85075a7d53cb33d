"""End-to-end training steps of real models with torch's activations against kplay's:
`python -m kplay.bench_models [--models ...] [--modes ...] [--rounds N] [--quick] [--json PATH]`.

Each model (torchvision's resnet50, mobilenet_v3_large, efficientnet_b0, convnext_tiny, random
init; a 4-layer GPT-2 and a 4-layer LLaMA-style model from transformers configs, no downloads) is
built once; kplay's variant is kplay.torch.replace_activations on a deep copy, so both have the
same weights (in the LLaMA model that swaps each gated MLP for kplay.nn.GatedMLP: silu(gate) * up
as one fused kernel each way). Per mode (eager float32, eager bfloat16 autocast, torch.compile with bfloat16
autocast; compile_f32 on request) the two variants take training steps (forward, loss, backward,
SGD step) in interleaved rounds, the order swapped every round (A B, B A, A B, ...); a round's
time is its steps' wall time over the step count, synchronized only at its ends, as a training
loop runs. Reported per row: median and interquartile range of the rounds, kplay over torch, the
verdict (kplay._bench.verdict), the GPU kernel time per step and its share of the step
(torch.profiler), the first step's loss of each variant from the same weights and data (dropout
seeded alike), the modules swapped, and under torch.compile the graph breaks of each variant
(torch._dynamo's counters). The table is printed; --json writes the whole result.

Without a CUDA device it says so and exits with status 3, having run nothing.
"""
from __future__ import annotations

import argparse
import copy
import sys
import time
from typing import Any, Callable, Dict, List, NamedTuple, Optional, Sequence, Tuple

from . import _bench

MODES = ("eager_f32", "eager_bf16", "compile_bf16", "compile_f32")
DEFAULT_MODES = ("eager_f32", "eager_bf16", "compile_bf16")


class ModelSpec(NamedTuple):
    name: str
    build: Callable[[], Any]  # -> torch.nn.Module (on the current default device)
    batch: int
    make_batch: Callable[[Any, int, Any], Tuple[Any, ...]]  # (torch, batch, device) -> inputs
    loss: Callable[[Any, Tuple[Any, ...]], Any]  # (model, inputs) -> scalar loss
    activation_classes: Tuple[str, ...]  # "module.Class" of the activations the builder must contain
    library: str  # the package it needs


# ---- the models ------------------------------------------------------------------------------------

def _torchvision(name: str) -> Callable[[], Any]:
    def build() -> Any:
        import torchvision

        return getattr(torchvision.models, name)(weights=None)

    return build


def _images(torch: Any, batch: int, device: Any) -> Tuple[Any, ...]:
    x = torch.randn(batch, 3, 224, 224, device=device)
    y = torch.randint(0, 1000, (batch,), device=device)
    return x, y


def _classify(model: Any, inputs: Tuple[Any, ...]) -> Any:
    import torch.nn.functional as F

    x, y = inputs
    return F.cross_entropy(model(x), y)


# Sequence length of the language models; their batch is in sequences (8 x 512 tokens).
SEQ_LEN = 512


def build_gpt2() -> Any:
    """GPT-2 small's widths (768, 12 heads, GPT-2's vocabulary), 4 layers, its gelu_new
    (transformers' NewGELUActivation); dropout off so that both variants see the same step."""
    import transformers

    config = transformers.GPT2Config(n_layer=4, n_embd=768, n_head=12, vocab_size=50257, n_positions=1024,
                                     activation_function="gelu_new", resid_pdrop=0.0, embd_pdrop=0.0,
                                     attn_pdrop=0.0, use_cache=False)
    return transformers.GPT2LMHeadModel(config)


def build_llama() -> Any:
    """A LLaMA-style decoder: 4 layers of width 1024 (16 heads, 4 key-value heads), gated SiLU MLP
    of 2816, RMSNorm, rotary positions, a 32000-token vocabulary."""
    import transformers

    config = transformers.LlamaConfig(hidden_size=1024, intermediate_size=2816, num_hidden_layers=4,
                                      num_attention_heads=16, num_key_value_heads=4, vocab_size=32000,
                                      max_position_embeddings=1024, hidden_act="silu", use_cache=False)
    return transformers.LlamaForCausalLM(config)


def _tokens(vocab: int) -> Callable[[Any, int, Any], Tuple[Any, ...]]:
    def make(torch: Any, batch: int, device: Any) -> Tuple[Any, ...]:
        return (torch.randint(0, vocab, (batch, SEQ_LEN), device=device),)

    return make


def _causal_lm(model: Any, inputs: Tuple[Any, ...]) -> Any:
    (ids,) = inputs
    return model(input_ids=ids, labels=ids).loss


_TV = "torch.nn.modules.activation."
MODELS: Dict[str, ModelSpec] = {s.name: s for s in (
    ModelSpec("resnet50", _torchvision("resnet50"), 32, _images, _classify, (_TV + "ReLU",), "torchvision"),
    ModelSpec("mobilenet_v3_large", _torchvision("mobilenet_v3_large"), 64, _images, _classify,
              (_TV + "ReLU", _TV + "Hardswish", _TV + "Hardsigmoid"), "torchvision"),
    ModelSpec("efficientnet_b0", _torchvision("efficientnet_b0"), 64, _images, _classify,
              (_TV + "SiLU", _TV + "Sigmoid"), "torchvision"),
    ModelSpec("convnext_tiny", _torchvision("convnext_tiny"), 32, _images, _classify, (_TV + "GELU",),
              "torchvision"),
    ModelSpec("gpt2", build_gpt2, 8, _tokens(50257), _causal_lm, ("transformers.activations.NewGELUActivation",),
              "transformers"),
    # transformers maps "silu" to its SiLUActivation or to nn.SiLU, by version: either is LLaMA's
    ModelSpec("llama", build_llama, 8, _tokens(32000), _causal_lm,
              ("transformers.activations.SiLUActivation|" + _TV + "SiLU",), "transformers"),
)}


def class_path(module: Any) -> str:
    cls = type(module)
    return f"{cls.__module__}.{cls.__name__}"


def activation_census(model: Any) -> Dict[str, int]:
    """Activation modules by class: torch.nn's activation classes (softmax and attention aside) and
    transformers' and timm's, which is where replace_activations looks."""
    counts: Dict[str, int] = {}
    for m in model.modules():
        path = class_path(m)
        if path.startswith(_TV):
            if type(m).__name__ in ("MultiheadAttention", "Softmax", "Softmin", "Softmax2d", "LogSoftmax"):
                continue
        elif not (path.startswith("transformers.activations.") or path.startswith("timm.layers.")):
            continue
        if type(m).__module__.startswith("timm.layers") and not hasattr(m, "inplace"):
            continue  # timm.layers holds every layer; its activations take inplace=
        counts[path] = counts.get(path, 0) + 1
    return counts


def kplay_variant(model: Any) -> Tuple[Any, Dict[str, Any]]:
    """A deep copy of `model` with kplay's activations, and what was swapped and what was left."""
    import kplay.nn as knn
    import kplay.torch as kt

    before = activation_census(model)
    ours = kt.replace_activations(copy.deepcopy(model))
    swapped: Dict[str, int] = {}
    for m in ours.modules():
        if isinstance(m, knn.Activation):
            swapped[m.activation] = swapped.get(m.activation, 0) + 1
    left = activation_census(ours)
    # gated MLPs fused into one kernel (their act_fn, kplay's too, counts among the swapped above)
    fused = sum(isinstance(m, knn.GatedMLP) for m in ours.modules())
    return ours, {"swapped": sum(swapped.values()), "swapped_by_activation": swapped, "activations_before": before,
                  "left": left, "fused_gated_mlps": fused}


# ---- options -------------------------------------------------------------------------------------

def parse_args(argv: Optional[Sequence[str]] = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(prog="python -m kplay.bench_models", description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--models", default="all", help=f"comma-separated, or all: {', '.join(MODELS)}")
    p.add_argument("--modes", default=",".join(DEFAULT_MODES),
                   help=f"comma-separated, or all: {', '.join(MODES)} (default: %(default)s)")
    p.add_argument("--rounds", type=int, default=None, help="timed rounds per variant (default 10; --quick 3)")
    p.add_argument("--steps", type=int, default=None, help="training steps per round (default 4; --quick 2)")
    p.add_argument("--warmup", type=int, default=None,
                   help="untimed steps per variant before the rounds (default 3; --quick 2)")
    p.add_argument("--batch-scale", type=float, default=1.0,
                   help="multiplies every model's batch (default 1: resnet50 and convnext_tiny 32, "
                        "mobilenet_v3_large and efficientnet_b0 64, the language models 8 x 512 tokens)")
    p.add_argument("--profile-steps", type=int, default=2, help="steps under torch.profiler per variant (0: none)")
    p.add_argument("--quick", action="store_true",
                   help="a smoke run: resnet50 and gpt2 unless --models says otherwise, 3 rounds of 2 steps")
    p.add_argument("--time-limit", type=float, default=0.0,
                   help="seconds; no new row starts after this (the rows left are listed as not run); 0: none")
    p.add_argument("--device", type=int, default=0, help="CUDA device index")
    p.add_argument("--json", metavar="PATH", help="write the whole result here")
    args = p.parse_args(argv)
    try:
        models_text = "resnet50,gpt2" if args.quick and args.models == "all" else args.models
        args.models = _bench.parse_list(models_text, list(MODELS), "model")
        args.modes = _bench.parse_list(args.modes, list(MODES), "mode")
    except ValueError as e:
        p.error(str(e))
    quick = args.quick
    args.rounds = args.rounds if args.rounds is not None else (3 if quick else 10)
    args.steps = args.steps if args.steps is not None else (2 if quick else 4)
    args.warmup = args.warmup if args.warmup is not None else (2 if quick else 3)
    for name in ("rounds", "steps"):
        if getattr(args, name) < 1:
            p.error(f"--{name.replace('_', '-')} must be at least 1")
    if args.warmup < 1:
        p.error("--warmup must be at least 1 (the first step compiles and loads kernels)")
    if args.profile_steps < 0 or args.time_limit < 0 or not args.batch_scale > 0:
        p.error("--profile-steps and --time-limit must be >= 0, --batch-scale > 0")
    return args


# ---- one row -------------------------------------------------------------------------------------

class _Variant:
    """One side of a row: a model, its optimizer, the step function."""

    def __init__(self, torch: Any, spec: ModelSpec, model: Any, inputs: Tuple[Any, ...], mode: str,
                 device_type: str) -> None:
        self.torch = torch
        self.device_type = device_type
        self.model = model.train()
        self.compiled = torch.compile(self.model) if mode.startswith("compile") else self.model
        self.opt = torch.optim.SGD(self.model.parameters(), lr=1e-4, momentum=0.9)
        self.inputs = inputs
        self.spec = spec
        self.autocast = mode.endswith("bf16")

    def step(self) -> Any:
        torch = self.torch
        self.opt.zero_grad(set_to_none=True)
        with torch.autocast(self.device_type, dtype=torch.bfloat16, enabled=self.autocast):
            loss = self.spec.loss(self.compiled, self.inputs)
        loss.backward()
        self.opt.step()
        return loss.detach()


def _graph_breaks(torch: Any) -> Dict[str, Any]:
    from torch._dynamo.utils import counters

    reasons = dict(counters["graph_break"])
    return {"graph_breaks": int(sum(reasons.values())), "break_reasons": {str(k)[:200]: v for k, v in reasons.items()},
            "graphs": int(counters["stats"].get("unique_graphs", 0))}


def _first_step(torch: Any, variant: _Variant, seed: int) -> Tuple[float, float, Dict[str, Any]]:
    """The first step from the shared weights (seconds, loss); under torch.compile also the graph
    breaks dynamo counted while it compiled this variant."""
    compiling = variant.compiled is not variant.model
    if compiling:
        from torch._dynamo.utils import counters

        counters.clear()
    torch.manual_seed(seed)  # dropout and stochastic depth draw the same masks in both variants
    torch.cuda.synchronize()
    t0 = time.perf_counter()
    loss = variant.step()
    torch.cuda.synchronize()
    seconds = time.perf_counter() - t0
    return seconds, float(loss), (_graph_breaks(torch) if compiling else {})


def _round(torch: Any, variant: _Variant, steps: int) -> float:
    torch.cuda.synchronize()
    t0 = time.perf_counter()
    for _ in range(steps):
        variant.step()
    torch.cuda.synchronize()
    return (time.perf_counter() - t0) * 1e3 / steps


def run_row(torch: Any, spec: ModelSpec, mode: str, base: Any, ours: Any, census: Dict[str, Any],
            args: argparse.Namespace, device: Any) -> Dict[str, Any]:
    batch = max(1, round(spec.batch * args.batch_scale))
    torch.manual_seed(1)
    inputs = spec.make_batch(torch, batch, device)
    # Each row starts from the built weights: the earlier rows' steps trained the models.
    variants = {"torch": _Variant(torch, spec, copy.deepcopy(base), inputs, mode, device.type),
                "kplay": _Variant(torch, spec, copy.deepcopy(ours), inputs, mode, device.type)}
    row: Dict[str, Any] = {"model": spec.name, "mode": mode, "batch": batch, "swapped": census["swapped"]}
    for name, v in variants.items():
        seconds, loss, breaks = _first_step(torch, v, seed=2)
        row[name] = {"first_step_s": seconds, "first_loss": loss, **breaks}
    row["loss_rel_diff"] = _bench.rel_diff(row["kplay"]["first_loss"], row["torch"]["first_loss"])
    rounds = _bench.interleaved({n: v.step for n, v in variants.items()},
                                {n: (lambda v=v: _round(torch, v, args.steps)) for n, v in variants.items()},
                                args.warmup - 1, args.rounds)
    for name in rounds:
        row[name].update(_bench.summary(rounds[name]))
        if args.profile_steps:
            g = _bench.gpu_time(torch, variants[name].step, args.profile_steps)
            row[name].update(g)
            if g.get("gpu_ms") is not None:
                row[name]["gpu_share"] = g["gpu_ms"] / row[name]["median"]
    row.update(_bench.verdict(rounds["torch"], rounds["kplay"]))
    return row


# ---- the table -----------------------------------------------------------------------------------

HEADERS = ("model", "mode", "batch", "swapped", "torch ms", "kplay ms", "kplay/torch", "met", "GPU ms t/k",
           "GPU share t/k", "breaks t/k", "loss rel diff", "first step s t/k")


def table_row(row: Dict[str, Any]) -> List[str]:
    if row.get("error") or row.get("not_run"):
        why = row.get("error") or row.get("not_run")
        return [row["model"], row["mode"], "-", str(row.get("swapped", "-")), "-", "-", "-", "-", "-", "-", "-", "-",
                str(why)[:60]]
    t, k = row["torch"], row["kplay"]
    f = _bench.fmt

    def both(key: str, spec: str) -> str:
        return f"{f(t.get(key), spec)}/{f(k.get(key), spec)}"

    share = f"{f(t.get('gpu_share'), '.0%')}/{f(k.get('gpu_share'), '.0%')}"
    breaks = both("graph_breaks", "d") if "graph_breaks" in t else "-"
    return [row["model"], row["mode"], str(row["batch"]), str(row["swapped"]),
            f"{f(t['median'])} ±{f(t['iqr'])}", f"{f(k['median'])} ±{f(k['iqr'])}", f(row["ratio"], ".3f"),
            "yes" if row["met"] else "NO", both("gpu_ms", ".2f"), share, breaks, f(row["loss_rel_diff"], ".1e"),
            both("first_step_s", ".1f")]


def print_table(rows: Sequence[Dict[str, Any]], out: Any = sys.stdout) -> None:
    out.write(_bench.table(HEADERS, [table_row(r) for r in rows]) + "\n")
    out.write("ms: median of the rounds' mean step time, ± their interquartile range; met: kplay's median is not "
              "above torch's by more than the larger spread; GPU ms: kernel time per step (torch.profiler), "
              "share: of the step; breaks: graph breaks under torch.compile (t/k: torch's activations/kplay's)\n")
    out.flush()


def summarize(rows: Sequence[Dict[str, Any]]) -> Dict[str, Any]:
    """The verdicts over all rows: rows met, kplay's graph breaks, models where nothing was swapped,
    rows that failed or were not run."""
    timed = [r for r in rows if "met" in r]
    compiled = [r for r in timed if "graph_breaks" in r["kplay"]]
    breaks = [f"{r['model']} {r['mode']}: {r['kplay']['graph_breaks']}" for r in compiled if r["kplay"]["graph_breaks"]]
    unswapped = sorted({r["model"] for r in rows if r.get("swapped") == 0})
    failed = [f"{r['model']} {r['mode']}" for r in rows if r.get("error")]
    not_run = [f"{r['model']} {r['mode']}" for r in rows if r.get("not_run")]
    met = sum(r["met"] for r in timed)
    missed = [f"{r['model']} {r['mode']}" for r in timed if not r["met"]]
    lines = [f"met: {met} of {len(timed)} rows" + (f" (not met: {', '.join(missed)})" if missed else ""),
             f"graph breaks with kplay's activations: {'; '.join(breaks) if breaks else 'none'} "
             f"({len(compiled)} compiled rows)",
             f"models where replace_activations swapped nothing: {', '.join(unswapped) or 'none'}"]
    if failed:
        lines.append(f"failed: {', '.join(failed)}")
    if not_run:
        lines.append(f"not run (time limit): {', '.join(not_run)}")
    return {"met": met, "timed": len(timed), "kplay_graph_breaks": breaks, "unswapped": unswapped,
            "failed": failed, "not_run": not_run, "lines": lines}


# ---- main ----------------------------------------------------------------------------------------

def main(argv: Optional[Sequence[str]] = None) -> int:
    args = parse_args(argv)
    torch = _bench.require_cuda("kplay.bench_models")
    import kplay.torch  # noqa: F401  (fails here, before any model is built, where kplay.torch cannot load)

    torch.cuda.set_device(args.device)
    device = torch.device("cuda", args.device)
    start = time.perf_counter()
    command = "python -m kplay.bench_models " + " ".join(sys.argv[1:] if argv is None else argv)
    doc: Dict[str, Any] = {"command": command,
                           "environment": _bench.environment(torch, args.device),
                           "settings": {k: v for k, v in vars(args).items() if k != "json"}, "rows": []}
    rows: List[Dict[str, Any]] = doc["rows"]
    built: Dict[str, Any] = {}  # name -> (torch's model, kplay's, census), or the build's error
    # Mode by mode, every model in each: the eager rows come first, so that a --time-limit cuts
    # compiled rows (minutes of compiling each) before it cuts eager ones.
    for mode in args.modes:
        for name in args.models:
            spec = MODELS[name]
            if args.time_limit and time.perf_counter() - start > args.time_limit:
                rows.append({"model": name, "mode": mode, "not_run": "time limit"})
                continue
            if name not in built:
                try:
                    torch.manual_seed(0)
                    base = spec.build().to(device)
                    built[name] = (base, *kplay_variant(base))
                    census = built[name][2]
                    print(f"{name}: {census['swapped']} activation modules swapped "
                          f"{census['swapped_by_activation']}, {census['fused_gated_mlps']} gated MLPs fused; "
                          f"left as they were: {census['left'] or 'none'}", flush=True)
                except Exception as e:  # noqa: BLE001  (a missing package or a failing builder: its rows say so)
                    built[name] = f"build: {type(e).__name__}: {e}"
            if isinstance(built[name], str):
                rows.append({"model": name, "mode": mode, "error": built[name]})
                continue
            base, ours, census = built[name]
            t0 = time.perf_counter()
            try:
                row = run_row(torch, spec, mode, base, ours, census, args, device)
            except Exception as e:  # noqa: BLE001
                row = {"model": name, "mode": mode, "swapped": census["swapped"], "error": f"{type(e).__name__}: {e}"}
            row["census"] = census
            row["row_s"] = time.perf_counter() - t0
            rows.append(row)
            print(_bench.table(HEADERS, [table_row(row)]).splitlines()[-1], flush=True)
            if mode.startswith("compile"):
                torch._dynamo.reset()
            torch.cuda.empty_cache()
    rows.sort(key=lambda r: (args.models.index(r["model"]), args.modes.index(r["mode"])))
    doc["total_s"] = time.perf_counter() - start
    print()
    print_table(rows)
    doc["summary"] = summarize(rows)
    for line in doc["summary"]["lines"]:
        print(line)
    print(f"total {doc['total_s']:.0f} s")
    if args.json:
        _bench.write_json(args.json, doc)
        print(f"wrote {args.json}")
    failed = [r for r in rows if r.get("error")]
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
