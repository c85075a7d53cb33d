"""Per-call host cost on a small tensor (default 4096 float32 elements), torch against kplay in one
process: eager without and with grad, forward + backward, the op through torch.ops, kplay.forward
and kplay.backward (the framework-neutral calls, on torch tensors), compiled
f(x) = selu(x) * 2, a compiled selu alone and a compiled chain of 8 selu (kplay in each compile
mode; and the chain as a CUDA graph, mode="reduce-overhead"), and a bare prepared launch (kplay's
floor from Python). Host time per call = wall time of a burst of calls / count, with a sync after
each burst so the GPU queue never fills; the cases run interleaved, round after round, and each
prints its median over the rounds.

    python examples/overhead.py [--n 4096] [--calls 2000] [--rounds 7] [--json FILE]
"""
import argparse
import json
import statistics
import time

from _needs import cuda_or_exit

cuda_or_exit()

import torch

import kplay
import kplay.torch as kt


# torch's selu is elu with these (torch/nn/functional.py); its backward is aten.elu_backward.
SELU_ALPHA, SELU_SCALE = 1.6732632423543772848170429916717, 1.0507009873554804934193349852946


def burst_us(fn, calls):
    torch.cuda.synchronize()
    t0 = time.perf_counter()
    for _ in range(calls):
        fn()
    t1 = time.perf_counter()
    torch.cuda.synchronize()
    return (t1 - t0) / calls * 1e6


# Compiled functions: one def each, so each has its own code object and dynamo cache entry, compiled
# under the mode set when it first runs.
def torch_selu2(x):
    return torch.selu(x) * 2


def kplay_selu2_kernel(x):
    return kt.selu(x) * 2


def kplay_selu2_auto(x):
    return kt.selu(x) * 2


def kplay_selu2_decompose(x):
    return kt.selu(x) * 2


def torch_selu1(x):
    return torch.selu(x)


def kplay_selu1_kernel(x):
    return kt.selu(x)


def torch_chain8(x):
    for _ in range(8):
        x = torch.selu(x)
    return x


def kplay_chain8_kernel(x):
    for _ in range(8):
        x = kt.selu(x)
    return x


def kplay_chain8_auto(x):
    for _ in range(8):
        x = kt.selu(x)
    return x


def kplay_chain8_decompose(x):
    for _ in range(8):
        x = kt.selu(x)
    return x


def torch_chain8_graphs(x):
    for _ in range(8):
        x = torch.selu(x)
    return x


def kplay_chain8_graphs(x):
    for _ in range(8):
        x = kt.selu(x)
    return x


def compiled(fn, kplay_mode, x, **options):  # options: torch.compile's, its `mode` among them
    kt.set_compile_mode(kplay_mode)
    c = torch.compile(fn, fullgraph=True, **options)
    c(x)  # compiles now, under this mode
    kt.set_compile_mode("auto")
    return c


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--n", type=int, default=4096)
    ap.add_argument("--calls", type=int, default=2000)
    ap.add_argument("--rounds", type=int, default=7)
    ap.add_argument("--json", help="also write the medians here")
    args = ap.parse_args()
    x = torch.randn(args.n, device="cuda")
    xg = x.clone().requires_grad_()
    g = torch.ones_like(x)
    out = torch.empty_like(x)
    launcher = kplay._core.Launcher.cuda("selu", kplay._core.F32, False, False, x.get_device())
    stream = torch.cuda.current_stream().cuda_stream
    xp, op, n = x.data_ptr(), out.data_ptr(), x.numel()

    def fwd_bwd(f):
        def step():
            f(xg).backward(g)
        return step

    # (row, torch's call or None, {kplay column: call})
    rows = [
        ("eager, no grad", lambda: torch.selu(x), {"kplay": lambda: kt.selu(x)}),
        ("eager, input requires grad", lambda: torch.selu(xg), {"kplay": lambda: kt.selu(xg)}),
        ("eager, forward + backward", fwd_bwd(torch.selu), {"kplay": fwd_bwd(kt.selu)}),
        ("torch.ops (aten.selu / kplay.forward)", lambda: torch.ops.aten.selu(x),
         {"kplay": lambda: torch.ops.kplay.forward(x, "selu")}),
        ("kplay.forward (any array API)", lambda: torch.selu(x), {"kplay": lambda: kplay.forward("selu", x)}),
        ("kplay.backward (any array API; torch: aten.elu_backward)",
         lambda: torch.ops.aten.elu_backward(g, SELU_ALPHA, SELU_SCALE, 1.0, False, x),
         {"kplay": lambda: kplay.backward("selu", g, x)}),
        ("compiled f(x)=selu(x)*2", None, {}),
        ("compiled selu(x) alone", None, {}),
        ("compiled chain of 8 selu", None, {}),
        ("compiled chain of 8, CUDA graphs", None, {}),
        ("bare prepared launch (Launcher.launch)", None,
         {"kplay": lambda: launcher.launch(xp, 0, op, n, stream, True)}),
    ]
    c = {
        "compiled f(x)=selu(x)*2": (compiled(torch_selu2, "auto", x),
                                    {"kplay": compiled(kplay_selu2_kernel, "kernel", x),
                                     "kplay auto": compiled(kplay_selu2_auto, "auto", x),
                                     "kplay decompose": compiled(kplay_selu2_decompose, "decompose", x)}),
        "compiled selu(x) alone": (compiled(torch_selu1, "auto", x),
                                   {"kplay": compiled(kplay_selu1_kernel, "kernel", x)}),
        "compiled chain of 8 selu": (compiled(torch_chain8, "auto", x),
                                     {"kplay": compiled(kplay_chain8_kernel, "kernel", x),
                                      "kplay auto": compiled(kplay_chain8_auto, "auto", x),
                                      "kplay decompose": compiled(kplay_chain8_decompose, "decompose", x)}),
        # mode="reduce-overhead": Inductor replays the graph as a CUDA graph (kplay's ops are
        # capture-safe once warm), so no op costs host time per call.
        "compiled chain of 8, CUDA graphs": (compiled(torch_chain8_graphs, "auto", x, mode="reduce-overhead"),
                                             {"kplay": compiled(kplay_chain8_graphs, "kernel", x,
                                                                mode="reduce-overhead")}),
    }
    cases = {}
    for name, t, k in rows:
        if name in c:
            tc, kc = c[name]
            t, k = (lambda f=tc: f(x)), {col: (lambda f=f: f(x)) for col, f in kc.items()}
        if t is not None:
            cases[(name, "torch")] = t
        for col, f in k.items():
            cases[(name, col)] = f
    for f in cases.values():  # warm-up: kernels compiled or loaded, allocator primed
        for _ in range(50):
            f()
    samples = {key: [] for key in cases}
    for _ in range(args.rounds):
        for key, f in cases.items():
            samples[key].append(burst_us(f, args.calls))
    med = {key: statistics.median(v) for key, v in samples.items()}

    cols = ["torch", "kplay", "kplay auto", "kplay decompose"]
    print(f"host time per call, us (median of {args.rounds} interleaved rounds of {args.calls} calls), "
          f"{args.n} float32 elements, {torch.cuda.get_device_name()}, torch {torch.__version__}, "
          f"kplay.torch C++ ops: {kt.EXTENSION}; 'kplay' in compiled rows: compile mode kernel")
    print(f"| {'call':<40} | " + " | ".join(f"{c_:>15}" for c_ in cols) + " | kplay/torch |")
    print("|" + "-" * 42 + "|" + "|".join("-" * 17 for _ in cols) + "|-------------|")
    for name, _, _ in rows:
        vals = [med.get((name, c_)) for c_ in cols]
        ratio = (f"{vals[1] / vals[0]:.2f}" if vals[0] and vals[1] else "")
        print(f"| {name:<40} | " + " | ".join(f"{v:15.2f}" if v is not None else f"{'-':>15}" for v in vals)
              + f" | {ratio:>11} |")
    per_op = (med[("compiled chain of 8 selu", "kplay")] - med[("compiled selu(x) alone", "kplay")]) / 7
    bare = med[("bare prepared launch (Launcher.launch)", "kplay")]
    print(f"kplay op inside a compiled graph (kernel mode, chain of 8 minus one, per op): {per_op:.2f} us; "
          f"bare prepared launch {bare:.2f} us; difference {per_op - bare:+.2f} us (goal <= 2)")
    def ratio(row):
        return med[(row, "kplay")] / med[(row, "torch")]

    print(f"eager no grad kplay/torch {ratio('eager, no grad'):.2f}, "
          f"with grad {ratio('eager, input requires grad'):.2f}, "
          f"forward + backward {ratio('eager, forward + backward'):.2f} (goal <= 1, 0.8 aimed)")
    if args.json:
        with open(args.json, "w") as f:
            json.dump({f"{name} | {col}": v for (name, col), v in med.items()}, f, indent=1)


if __name__ == "__main__":
    main()
