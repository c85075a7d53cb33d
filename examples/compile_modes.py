"""kplay's compile modes on models: the training step (forward + backward) of a model compiled with
torch's activations against the same model with kplay's in each compile mode ("kernel": kplay's
opaque op; "decompose": kplay's formula fused by Inductor; "auto": the default), float32 and
bfloat16 autocast, in one process with the variants interleaved round after round; median step
time and spread (max - min) over the rounds, and the loss's relative difference from torch's.
What kplay.torch.set_compile_mode's default should be is read from this table.

    python examples/compile_modes.py [--models mlp efficientnet_b0 convnext_tiny] [--rounds 7] [--steps 10]
"""
import argparse
import copy
import statistics
import time

from _needs import cuda_or_exit

cuda_or_exit()

import torch

import kplay.torch as kt

MODES = ("kernel", "decompose", "auto")


def make(name):
    if name == "mlp":  # GPT-2's MLP shape with its GELU(tanh)
        model = torch.nn.Sequential(torch.nn.Linear(1024, 4096), torch.nn.GELU(approximate="tanh"),
                                    torch.nn.Linear(4096, 1024), torch.nn.SiLU(), torch.nn.Linear(1024, 1024))
        return model, (512, 1024)
    import torchvision

    return getattr(torchvision.models, name)(weights=None), (32, 3, 224, 224)


def step_fn(model, x, dtype):
    def step():
        with torch.autocast("cuda", dtype=torch.bfloat16, enabled=dtype == torch.bfloat16):
            loss = model(x).float().square().mean()
        loss.backward()
        return loss.detach()

    return step


_variants = 0


def compiled_variant(base, mode, x, dtype):
    # Each variant gets a function of its own (its own code object, so its own dynamo cache
    # entry, traced under its own mode): compiling the modules themselves would let one variant's
    # graph serve another, since the modules' code objects are shared.
    global _variants
    _variants += 1
    namespace = {}
    exec(f"def forward_{_variants}(model, x):\n    return model(x)\n", namespace)
    model = copy.deepcopy(base)
    if mode is not None:
        kt.replace_activations(model)
        kt.set_compile_mode(mode)
    compiled = torch.compile(namespace[f"forward_{_variants}"], fullgraph=True)
    step = step_fn(lambda t: compiled(model, t), x, dtype)
    loss = step()  # compiles now
    kt.set_compile_mode("auto")
    return step, loss


def timed(step, steps):
    torch.cuda.synchronize()
    t0 = time.perf_counter()
    for _ in range(steps):
        step()
    torch.cuda.synchronize()
    return (time.perf_counter() - t0) / steps * 1e3


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--models", nargs="+", default=["mlp", "efficientnet_b0"])
    ap.add_argument("--rounds", type=int, default=7)
    ap.add_argument("--steps", type=int, default=10)
    args = ap.parse_args()
    torch.manual_seed(0)
    torch._dynamo.config.cache_size_limit = 64
    print(f"training step, ms: median (spread) of {args.rounds} interleaved rounds of {args.steps} steps; "
          f"{torch.cuda.get_device_name()}, torch {torch.__version__}, kplay C++ ops {kt.EXTENSION}")
    print("| model | dtype | torch compiled | " + " | ".join(f"kplay {m}" for m in MODES)
          + " | loss rel. diff (per mode) |")
    print("|---|---|---|" + "---|" * len(MODES) + "---|")
    for name in args.models:
        base, shape = make(name)
        base = base.cuda()
        x = torch.randn(shape, device="cuda")
        for dtype in (torch.float32, torch.bfloat16):
            variants = {"torch": compiled_variant(base, None, x, dtype)}
            for mode in MODES:
                variants[mode] = compiled_variant(base, mode, x, dtype)
            for step, _ in variants.values():  # warm-up
                for _ in range(3):
                    step()
            samples = {k: [] for k in variants}
            for _ in range(args.rounds):
                for k, (step, _) in variants.items():
                    samples[k].append(timed(step, args.steps))
            ref = variants["torch"][1]
            cells = [f"{statistics.median(v):.2f} ({max(v) - min(v):.2f})" for v in samples.values()]
            diffs = " / ".join(f"{abs(variants[m][1] - ref).item() / abs(ref).item():.1e}" for m in MODES)
            print(f"| {name} | {str(dtype).replace('torch.', '')} | " + " | ".join(cells) + f" | {diffs} |")


if __name__ == "__main__":
    main()
